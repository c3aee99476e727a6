// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Test} from "forge-std/Test.sol";

import {WrapVerifierDevnetInsecure} from "../verifier/WrapVerifierDevnetInsecure.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";
import {TaskLeafHarness} from "./TaskLeaf.t.sol";

/// @notice A real batch settled by the real wrap: three task proofs of two models aggregated,
/// wrapped with the production FRI parameters and proven with Groth16 under the INSECURE devnet
/// key (`tgrid-sequencer wrap --insecure-devnet-key`, file `*.batch.g16.json`). The contract side
/// recomputes the batch root and the public input from the leaves with TaskLeafLib (the encoding
/// TaskMarket's settleBatch hashes, the task id being the order digest), and the verifier
/// generated from that key accepts the Rust proof and nothing else.
contract WrapVerifierDevnetInsecureTest is Test {
    string internal constant KEY_ID = "wrap-production-r4q21g16-b2040e15e164b7bb-6f990bdc6e64c4c2d710109c5ea949d3ceec7851903ff7a22665a9a12f725714-insecure-devnet";
    string internal constant DIR = "contracts/test/fixtures/groth16/";
    string internal constant OUT = "contracts/verifier/WrapVerifierDevnetInsecure.sol";

    WrapVerifierDevnetInsecure internal verifier;
    TaskLeafHarness internal lib;
    string internal json;
    uint256[8] internal proof;
    TaskLeaf[] internal leaves;
    bytes32 internal registryRoot;

    function setUp() public {
        verifier = new WrapVerifierDevnetInsecure();
        lib = new TaskLeafHarness();
        json = vm.readFile(string.concat(DIR, KEY_ID, ".batch.g16.json"));
        uint256[] memory words = vm.parseJsonUintArray(json, ".proof");
        assertEq(words.length, 8);
        for (uint256 i = 0; i < 8; ++i) {
            proof[i] = words[i];
        }
        uint256 n = vm.parseJsonUint(json, ".count");
        for (uint256 i = 0; i < n; ++i) {
            string memory p = string.concat(".leaves[", vm.toString(i), "]");
            leaves.push(
                TaskLeaf({
                    taskId: vm.parseJsonBytes32(json, string.concat(p, ".task_id")),
                    modelId: vm.parseJsonBytes32(json, string.concat(p, ".model_id")),
                    inputCommitment: vm.parseJsonBytes32(json, string.concat(p, ".input_commitment")),
                    outputCommitment: vm.parseJsonBytes32(json, string.concat(p, ".output_commitment")),
                    provider: vm.parseJsonAddress(json, string.concat(p, ".provider"))
                })
            );
        }
        registryRoot = vm.parseJsonBytes32(json, ".registry_root");
    }

    function _input(TaskLeaf[] memory ls) internal view returns (uint256) {
        return lib.publicInput(lib.batchRoot(ls), registryRoot, ls.length);
    }

    function test_contractRecomputesRootAndInputOfTheRustBatch() public view {
        assertEq(lib.batchRoot(leaves), vm.parseJsonBytes32(json, ".batch_root"));
        assertEq(_input(leaves), vm.parseJsonUint(json, ".public_input"));
    }

    function test_acceptsTheRustProofOfTheRealBatch() public view {
        assertTrue(verifier.verifyProof(proof, _input(leaves)));
    }

    function test_rejectsAlteredLeaves() public view {
        TaskLeaf[] memory ls = leaves;
        ls[1].outputCommitment = bytes32(uint256(ls[1].outputCommitment) ^ 1);
        assertFalse(verifier.verifyProof(proof, _input(ls)));
        ls = leaves;
        ls[0].provider = address(0xBEEF);
        assertFalse(verifier.verifyProof(proof, _input(ls)));
        ls = leaves;
        (ls[1], ls[2]) = (ls[2], ls[1]);
        assertFalse(verifier.verifyProof(proof, _input(ls)));
        TaskLeaf[] memory dropped = new TaskLeaf[](2);
        (dropped[0], dropped[1]) = (leaves[0], leaves[1]);
        assertFalse(verifier.verifyProof(proof, _input(dropped)));
    }

    function test_rejectsAnotherRegistryRoot() public view {
        uint256 x = lib.publicInput(lib.batchRoot(leaves), bytes32(uint256(registryRoot) ^ 1), leaves.length);
        assertFalse(verifier.verifyProof(proof, x));
    }

    function test_rejectsTamperedProof() public view {
        uint256 x = _input(leaves);
        for (uint256 i = 0; i < 8; ++i) {
            uint256[8] memory bad = proof;
            bad[i] ^= 1;
            assertFalse(verifier.verifyProof(bad, x));
        }
    }

    function test_gas() public {
        uint256[8] memory p = proof;
        uint256 x = _input(leaves);
        uint256 g = gasleft();
        bool ok = verifier.verifyProof(p, x);
        g -= gasleft();
        assertTrue(ok);
        emit log_named_uint("WrapVerifierDevnetInsecure.verifyProof gas (cold external call)", g);
        assertLt(g, 210_000);
    }

    function test_keyIdSaysInsecureAndMatchesTheFile() public view {
        assertEq(verifier.VERIFYING_KEY_ID(), KEY_ID);
        assertEq(vm.parseJsonString(json, ".key.id"), KEY_ID);
        assertTrue(vm.parseJsonBool(json, ".key.insecure"));
        assertEq(verifier.VERIFYING_KEY_DIGEST(), vm.parseJsonBytes32(json, ".key.verifying_key_digest"));
    }

    /// @notice The committed verifier is exactly what the generator renders from the committed key.
    function test_generatedVerifier_matchesRegeneration() public {
        string[] memory cmd = new string[](11);
        cmd[0] = "node";
        cmd[1] = "scripts/foundry/gen-verifier.js";
        cmd[2] = "--vk";
        cmd[3] = string.concat(DIR, KEY_ID, ".vk.json");
        cmd[4] = "--out";
        cmd[5] = OUT;
        cmd[6] = "--name";
        cmd[7] = "WrapVerifierDevnetInsecure";
        cmd[8] = "--key-id";
        cmd[9] = KEY_ID;
        cmd[10] = "--hex";
        bytes memory rendered = vm.ffi(cmd);
        bytes memory committed = bytes(vm.readFile(OUT));
        assertEq(keccak256(rendered), keccak256(committed));
    }
}
