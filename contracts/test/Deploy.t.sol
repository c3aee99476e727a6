// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";
import {stdJson} from "forge-std/StdJson.sol";

import {Deploy} from "../script/Deploy.s.sol";

/// @notice Runs the deployment script as on a devnet (broadcasting from anvil's first account) and
/// checks the wiring and the addresses JSON it writes.
contract DeployTest is Test {
    using stdJson for string;

    function test_run_deploysWiresAndWritesJson() public {
        string memory out = string.concat(vm.projectRoot(), "/out/test-deployments/deploy-test.json");
        vm.setEnv("TGRID_DEPLOYMENTS_OUT", out);
        Deploy script = new Deploy();
        Deploy.Deployment memory d = script.run();
        address admin = vm.addr(0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80);

        address tl = address(d.timelock);
        assertEq(d.registry.owner(), tl);
        assertEq(d.staking.owner(), tl);
        assertEq(d.escrow.owner(), tl);
        assertEq(d.settlement.owner(), tl);
        assertEq(d.staking.escrow(), address(d.escrow));
        assertEq(d.escrow.settlement(), address(d.settlement));
        assertEq(d.settlement.verifier(), address(d.verifier));
        assertEq(d.staking.treasury(), tl);
        assertEq(d.escrow.treasury(), tl);
        assertTrue(d.settlement.isSequencer(admin));
        assertEq(d.token.balanceOf(admin), d.token.TOTAL_SUPPLY());
        assertFalse(d.timelock.hasRole(d.timelock.DEFAULT_ADMIN_ROLE(), admin));
        assertTrue(d.timelock.hasRole(d.timelock.PROPOSER_ROLE(), address(d.governor)));
        assertTrue(d.registry.isModelActive(keccak256("tensorgrid devnet model v1")));
        assertEq(d.verifier.VERIFYING_KEY_ID(), "wrap-production-5ef98bd092609bcb-ff9c623f-insecure-devnet");

        string memory json = vm.readFile(out);
        assertEq(json.readUint(".chainId"), block.chainid);
        assertEq(json.readAddress(".token"), address(d.token));
        assertEq(json.readAddress(".timelock"), tl);
        assertEq(json.readAddress(".governor"), address(d.governor));
        assertEq(json.readAddress(".registry"), address(d.registry));
        assertEq(json.readAddress(".staking"), address(d.staking));
        assertEq(json.readAddress(".escrow"), address(d.escrow));
        assertEq(json.readAddress(".settlement"), address(d.settlement));
        assertEq(json.readAddress(".verifier"), address(d.verifier));
        assertEq(json.readString(".verifyingKeyId"), "wrap-production-5ef98bd092609bcb-ff9c623f-insecure-devnet");
        assertEq(json.readBytes32(".registryRoot"), d.registry.registryRoot());
    }
}
