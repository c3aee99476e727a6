// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";
import {stdJson} from "forge-std/StdJson.sol";

import {Deploy} from "../script/Deploy.s.sol";
import {ITaskMarket} from "../interfaces/market/ITaskMarket.sol";
import {Groth16Verifier} from "../verifier/Groth16Verifier.sol";
import {WrapVerifierDevnetInsecure} from "../verifier/WrapVerifierDevnetInsecure.sol";
import {Groth16KeyedVerifier} from "../verifier/Groth16KeyedVerifier.sol";
import {PublicInputBoundVerifier} from "./mocks/VerifierMocks.sol";

/// @notice Runs the deployment script as on a devnet (broadcasting from anvil's first account) and
/// checks the wiring and the addresses JSON it writes.
contract DeployTest is Test {
    using stdJson for string;

    function _assertParameters(ITaskMarket.Parameters memory p, ITaskMarket.Parameters memory e) internal pure {
        assertEq(p.verifier, e.verifier, "verifier");
        assertEq(p.maxBatchSize, e.maxBatchSize, "maxBatchSize");
        assertEq(p.protocolFeeBps, e.protocolFeeBps, "protocolFeeBps");
        assertEq(p.settlerShareBps, e.settlerShareBps, "settlerShareBps");
        assertEq(p.selfSettlementWindow, e.selfSettlementWindow, "selfSettlementWindow");
        assertEq(p.maxDeadlineDelay, e.maxDeadlineDelay, "maxDeadlineDelay");
        assertEq(p.disputeWindow, e.disputeWindow, "disputeWindow");
        assertEq(p.depositUnlockDelay, e.depositUnlockDelay, "depositUnlockDelay");
        assertEq(p.unbondingDelay, e.unbondingDelay, "unbondingDelay");
        assertEq(p.minPayment, e.minPayment, "minPayment");
        assertEq(p.treasury, e.treasury, "treasury");
    }

    function test_run_deploysWiresAndWritesJson() public {
        string memory out = string.concat(vm.projectRoot(), "/out/test-deployments/deploy-test.json");
        vm.setEnv("TGRID_DEPLOYMENTS_OUT", out);
        Deploy script = new Deploy();
        Deploy.Deployment memory d = script.run();
        address admin = vm.addr(0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80);
        Deploy.Config memory c = script.defaultConfig(admin);

        address tl = address(d.timelock);
        assertEq(d.registry.owner(), tl);
        assertEq(d.market.owner(), tl);
        assertEq(d.market.token(), address(d.token));
        assertEq(d.market.registry(), address(d.registry));
        ITaskMarket.Parameters memory expected = c.market;
        expected.verifier = address(d.verifier);
        expected.treasury = tl;
        _assertParameters(d.market.parameters(), expected);
        assertTrue(d.market.isSequencer(admin));
        assertEq(d.token.balanceOf(admin), d.token.TOTAL_SUPPLY());
        assertFalse(d.timelock.hasRole(d.timelock.DEFAULT_ADMIN_ROLE(), admin));
        assertTrue(d.timelock.hasRole(d.timelock.PROPOSER_ROLE(), address(d.governor)));
        assertTrue(d.timelock.hasRole(d.timelock.CANCELLER_ROLE(), address(d.governor)));
        assertEq(address(d.governor.timelock()), tl);
        assertTrue(d.registry.isModelActive(c.devnetModelId));
        assertEq(d.registry.registryRoot(), c.registryRoot);
        assertEq(d.verifier.VERIFYING_KEY_ID(), "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet");

        string memory json = vm.readFile(out);
        string[12] memory keys = [
            "chainId",
            "startBlock",
            "token",
            "timelock",
            "governor",
            "registry",
            "market",
            "verifier",
            "verifyingKeyId",
            "sequencer",
            "registryRoot",
            "devnetModelId"
        ];
        string[] memory written = vm.parseJsonKeys(json, "$");
        assertEq(written.length, keys.length, "JSON key count");
        for (uint256 i = 0; i < keys.length; ++i) {
            assertTrue(json.keyExists(string.concat(".", keys[i])), keys[i]);
        }
        assertEq(json.readUint(".chainId"), block.chainid);
        assertEq(json.readUint(".startBlock"), block.number);
        assertEq(json.readAddress(".token"), address(d.token));
        assertEq(json.readAddress(".timelock"), tl);
        assertEq(json.readAddress(".governor"), address(d.governor));
        assertEq(json.readAddress(".registry"), address(d.registry));
        assertEq(json.readAddress(".market"), address(d.market));
        assertEq(json.readAddress(".verifier"), address(d.verifier));
        assertEq(json.readString(".verifyingKeyId"), "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet");
        assertEq(json.readAddress(".sequencer"), admin);
        assertEq(json.readBytes32(".registryRoot"), d.registry.registryRoot());
        assertEq(json.readBytes32(".devnetModelId"), c.devnetModelId);
    }

    /// `deploy` passes `Config.market` through, fills in the verifier and the treasury (the
    /// timelock), and grants no sequencer role when none is configured.
    function test_deploy_customMarketParametersAndNoSequencer() public {
        Deploy script = new Deploy();
        Deploy.Config memory c = script.defaultConfig(address(script));
        c.sequencer = address(0);
        c.verifier = address(new Groth16Verifier());
        c.market = ITaskMarket.Parameters({
            verifier: address(0xdead), // overwritten
            maxBatchSize: 64,
            protocolFeeBps: 250,
            settlerShareBps: 5_000,
            selfSettlementWindow: 30 minutes,
            maxDeadlineDelay: 2 days,
            disputeWindow: 12 hours,
            depositUnlockDelay: 3 days,
            unbondingDelay: 3 days,
            minPayment: 5e18,
            treasury: address(0xbeef) // overwritten
        });
        Deploy.Deployment memory d = script.deploy(c);

        ITaskMarket.Parameters memory expected = c.market;
        expected.verifier = c.verifier;
        expected.treasury = address(d.timelock);
        _assertParameters(d.market.parameters(), expected);
        assertEq(address(d.verifier), c.verifier);
        assertEq(d.market.owner(), address(d.timelock));
        assertFalse(d.market.isSequencer(address(script)));
        assertFalse(d.market.isSequencer(address(0)));
        assertFalse(d.timelock.hasRole(d.timelock.DEFAULT_ADMIN_ROLE(), address(script)));
    }

    /// Off the devnet chain, `deploy` refuses every verifier whose key is public (or none).
    function test_RevertWhen_insecureVerifierOutsideDevnet() public {
        Deploy script = new Deploy();
        Deploy.Config memory c = script.defaultConfig(address(script));
        vm.chainId(1);
        address[3] memory insecure =
            [address(0), address(new Groth16Verifier()), address(new WrapVerifierDevnetInsecure())];
        for (uint256 i = 0; i < insecure.length; ++i) {
            c.verifier = insecure[i];
            vm.expectRevert(abi.encodeWithSelector(Deploy.InsecureVerifierOutsideDevnet.selector, 1, insecure[i]));
            script.deploy(c);
        }
        // The devnet key loaded into the generic keyed verifier is as insecure (the digest, not the
        // name, gives it away).
        Groth16KeyedVerifier keyed = new Groth16KeyedVerifier(_devnetKeyWords(), "a harmless-looking name");
        WrapVerifierDevnetInsecure devnet = new WrapVerifierDevnetInsecure();
        assertEq(keyed.VERIFYING_KEY_DIGEST(), devnet.VERIFYING_KEY_DIGEST());
        c.verifier = address(keyed);
        vm.expectRevert(abi.encodeWithSelector(Deploy.InsecureVerifierOutsideDevnet.selector, 1, address(keyed)));
        script.deploy(c);
        // Any other verifier is the deployer's call (here a test double, to reach the end).
        c.verifier = address(new PublicInputBoundVerifier());
        Deploy.Deployment memory d = script.deploy(c);
        assertEq(d.market.parameters().verifier, c.verifier);
    }

    /// @dev The INSECURE devnet wrap key (contracts/verifier/WrapVerifierDevnetInsecure.sol).
    function _devnetKeyWords() internal pure returns (uint256[18] memory) {
        return [
            0x0466b45473406554fcfea7750af6980812e06d896da3e5fa1c809516b77ae3d8,
            0x0102c73c9cedaf3bf9366e07039e0d9eeddfd58a9fc74a2cb4e452bec426f331,
            0x0d25e8536efee062b8fea49a26d873621775d4ba42076309402df8bd2a021127,
            0x245484d837b80c45acc2bdebe40f40d0f782cfc91672af26f73b9aa596b1b48d,
            0x20b8f57b1b92842283524083a936c2f797f8d1642a20d03bd5b555e972722625,
            0x1b8be43da9a52be657e9158f44ddfb3a06af7eb643558b46397aa27b50b14017,
            0x022b81913f43eda6630ff988d7238bda9207497e7202e1d8e4953cb616c2cafb,
            0x1d3223523f86a0a5a341f8ebb76c8d4e3665155a1b4b4d59c1feb0e77922a0f2,
            0x1408b0a017af3c7d84f8f595504397f664b83d584e9e0b6d53bf3c797101ac14,
            0x1991b1d5809dfbb28ad3d8ce75f631634efc6e2a91b29ba32954136e7f63bbba,
            0x1a6b352589870ec0e387ebbe5be2fc217ec7277e98951cb3dae69d16474e12c9,
            0x295c454069b48981726f188decaec658904c8a11c3caebf2da04aebd5b56644c,
            0x0c65a324cfb447af7228c39f5c792c5a586e61db9021ab2357f32148f5331d08,
            0x11705cca21184ef714ee66289a17952fa6e17554ea48c04f2a510289bb7914c6,
            0x1cc6d790d3696d16c5d9e863ffe6dd3dffb0d4d3a7a7880be13b3d9fe7470840,
            0x1e55b57677c58a31cfd4a78d01a18827204d55dfdb5ea76f3d0ee8c80e070f27,
            0x02b6debfab8a6480bb41d23877c5acc11046a700a32b0890e7f8a3deebae1386,
            0x22c18614b868fe078392a3108930dc9435734682caf56aa89b663b84be2249e0
        ];
    }

    function test_RevertWhen_timelockShorterThanUnbonding() public {
        Deploy script = new Deploy();
        Deploy.Config memory c = script.defaultConfig(address(script));
        c.timelockDelay = c.market.unbondingDelay - 1;
        vm.expectRevert(
            abi.encodeWithSelector(
                Deploy.TimelockShorterThanUnbonding.selector, c.market.unbondingDelay - 1, c.market.unbondingDelay
            )
        );
        script.deploy(c);
    }

    /// anvil's ten accounts (and no key at all) count as public keys; a fresh key does not.
    function test_isPublicKey() public {
        Deploy script = new Deploy();
        assertTrue(script.isPublicKey(0));
        assertTrue(script.isPublicKey(0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80));
        assertTrue(script.isPublicKey(0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6)); // #9
        assertFalse(script.isPublicKey(uint256(keccak256("a key nobody published"))));
    }
}
