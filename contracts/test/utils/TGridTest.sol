// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";

import {Deploy} from "../../script/Deploy.s.sol";
import {TGRID} from "../../token/TGRID.sol";
import {TGridGovernor} from "../../governance/TGridGovernor.sol";
import {TGridTimelock} from "../../governance/TGridTimelock.sol";
import {ModelRegistry} from "../../registry/ModelRegistry.sol";
import {Groth16Verifier} from "../../verifier/Groth16Verifier.sol";
import {TaskMarket} from "../../market/TaskMarket.sol";

/// @notice Shared fixture: the whole system deployed by the Deploy script's `deploy` with its
/// shipped governance and market defaults (so the tests also exercise the wiring and the values a
/// launch uses), funded actors that approved the market, and a snarkjs prover
/// for the devnet circuit.
abstract contract TGridTest is Test {
    Deploy internal deployer;
    Deploy.Config internal cfg;
    TGRID internal token;
    TGridTimelock internal timelock;
    TGridGovernor internal governor;
    ModelRegistry internal registry;
    Groth16Verifier internal verifier;
    TaskMarket internal market;

    address internal sequencer = makeAddr("sequencer");
    address internal poster = makeAddr("poster");
    address internal poster2 = makeAddr("poster2");
    address internal provider = makeAddr("provider");
    address internal provider2 = makeAddr("provider2");
    address internal stranger = makeAddr("stranger");

    bytes32 internal constant ROOT_A = keccak256("registry root A");
    bytes32 internal constant ROOT_B = keccak256("registry root B");
    bytes32 internal constant MODEL = keccak256("model lenet5 v1");
    bytes32 internal constant MODEL2 = keccak256("model digits v1");
    bytes32 internal constant DIGEST = keccak256("normalized circuit lenet5 v1");

    uint256 internal constant PAYMENT = 50e18;

    function setUp() public virtual {
        deployer = new Deploy();
        cfg = deployer.defaultConfig(address(deployer));
        cfg.tokenHolder = address(this);
        cfg.sequencer = sequencer;
        cfg.registryRoot = ROOT_A;
        cfg.devnetModelId = MODEL;
        cfg.devnetCircuitDigest = DIGEST;
        cfg.devnetModelUri = "ipfs://lenet5";
        // The one-constraint test circuit: the tests prove any public input with snarkjs.
        cfg.verifier = address(new Groth16Verifier());
        Deploy.Deployment memory d = deployer.deploy(cfg);
        token = d.token;
        timelock = d.timelock;
        governor = d.governor;
        registry = d.registry;
        verifier = Groth16Verifier(address(d.verifier));
        market = d.market;

        address[4] memory actors = [poster, poster2, provider, provider2];
        for (uint256 i = 0; i < actors.length; ++i) {
            assertTrue(token.transfer(actors[i], 1_000_000e18));
            vm.prank(actors[i]);
            token.approve(address(market), type(uint256).max);
        }
        vm.label(address(token), "TGRID");
        vm.label(address(timelock), "Timelock");
        vm.label(address(governor), "Governor");
        vm.label(address(registry), "ModelRegistry");
        vm.label(address(verifier), "Groth16Verifier");
        vm.label(address(market), "TaskMarket");
    }

    // ------------------------------------------------------------------ helpers

    /// @dev Installs `verifier_` as the market's verifier without {TaskMarket.setVerifier}'s
    /// known-good-proof check, by writing its storage slot: how the tests put a hostile verifier
    /// (reverting, re-entering) in place, as a compromised deployment would.
    function _forceVerifier(address verifier_) internal {
        address current = market.parameters().verifier;
        for (uint256 slot = 0; slot < 16; ++slot) {
            uint256 word = uint256(vm.load(address(market), bytes32(slot)));
            // forge-lint: disable-next-line(unsafe-typecast) -- the low 160 bits are the candidate
            if (address(uint160(word)) == current) {
                word = (word >> 160 << 160) | uint256(uint160(verifier_));
                vm.store(address(market), bytes32(slot), bytes32(word));
                assertEq(market.parameters().verifier, verifier_);
                return;
            }
        }
        revert("verifier slot not found");
    }

    /// @dev Groth16 proof for `publicInput` from the devnet circuit, via snarkjs (FFI).
    function _prove(uint256 publicInput) internal returns (uint256[8] memory proof) {
        string[] memory cmd = new string[](3);
        cmd[0] = "node";
        cmd[1] = "scripts/foundry/groth16-prove.js";
        cmd[2] = vm.toString(publicInput);
        proof = abi.decode(vm.ffi(cmd), (uint256[8]));
    }
}
