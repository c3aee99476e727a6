// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Vm} from "forge-std/Vm.sol";

import {TGridTest} from "./utils/TGridTest.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";

/// @notice Gas of the hot paths with the real Groth16 verifier. Every measured call starts with all
/// protocol contracts cooled (`vm.cool`), as in a fresh transaction; figures are the call frame's
/// execution gas, without the 21,000 intrinsic gas and calldata. Results are logged (-vv) and
/// written to out/gas/contracts-gas-*.json; docs/BENCHMARKS.md ("Contracts (gas)") records them.
contract GasTest is TGridTest {
    string internal constant _KEY = "gas";

    function setUp() public override {
        super.setUp();
        _stake(provider, 900_000e18);
        vm.createDir("out/gas", true);
    }

    function _coolAll() internal {
        vm.cool(address(token));
        vm.cool(address(registry));
        vm.cool(address(staking));
        vm.cool(address(escrow));
        vm.cool(address(settlement));
        vm.cool(address(verifier));
    }

    function _lastGas() internal view returns (uint256) {
        Vm.Gas memory g = vm.lastCallGas();
        return g.gasTotalUsed;
    }

    /// @dev Standard (non-floor) calldata gas of a transaction carrying `data`.
    function _calldataGas(bytes memory data) internal pure returns (uint256 cost) {
        for (uint256 i = 0; i < data.length; ++i) {
            cost += data[i] == 0 ? 4 : 16;
        }
    }

    function _batch(uint256 n, bool distinct) internal returns (TaskLeaf[] memory leaves) {
        leaves = new TaskLeaf[](n);
        for (uint256 i = 0; i < n; ++i) {
            address prov = provider;
            if (distinct) {
                prov = address(uint160(uint256(keccak256(abi.encode("gas provider", i)))));
                assertTrue(token.transfer(prov, 200e18));
                vm.startPrank(prov);
                token.approve(address(staking), type(uint256).max);
                staking.stake(200e18);
                vm.stopPrank();
            }
            bytes32 input = keccak256(abi.encode("gas input", n, i));
            bytes32 id = _post(poster, MODEL, input, PAYMENT, FEE_TIP, block.timestamp + 1 days);
            _accept(prov, id);
            leaves[i] = TaskLeaf({
                taskId: id,
                modelId: MODEL,
                inputCommitment: input,
                outputCommitment: keccak256(abi.encode("gas output", n, i)),
                provider: prov
            });
        }
    }

    function _measureBatch(uint256 n, bool distinct) internal returns (uint256 used, uint256 calldataGas) {
        TaskLeaf[] memory leaves = _batch(n, distinct);
        uint256[8] memory proof = _proveBatch(leaves, ROOT_A);
        calldataGas = _calldataGas(abi.encodeCall(settlement.submitBatch, (leaves, ROOT_A, proof)));
        _coolAll();
        vm.prank(sequencer);
        settlement.submitBatch(leaves, ROOT_A, proof);
        used = _lastGas();
    }

    function test_gas_postAcceptCancel() public {
        // Warm-up post so the poster's nonce slot is non-zero, as for any returning poster.
        _post(poster);

        _coolAll();
        vm.prank(poster);
        bytes32 id = escrow.postTask(MODEL, INPUT, PAYMENT, FEE_TIP, block.timestamp + 1 days);
        uint256 post = _lastGas();

        _coolAll();
        vm.prank(provider);
        escrow.acceptTask(id);
        uint256 accept = _lastGas();

        bytes32 id2 = _post(poster);
        _coolAll();
        vm.prank(poster);
        escrow.cancelTask(id2);
        uint256 cancel = _lastGas();

        emit log_named_uint("postTask", post);
        emit log_named_uint("acceptTask", accept);
        emit log_named_uint("cancelTask", cancel);
        vm.serializeUint(_KEY, "postTask", post);
        vm.serializeUint(_KEY, "acceptTask", accept);
        string memory json = vm.serializeUint(_KEY, "cancelTask", cancel);
        vm.writeJson(json, "out/gas/contracts-gas-post.json");
        assertLt(post, 150_000);
        assertLt(accept, 100_000);
    }

    function test_gas_submitBatch_sameProvider() public {
        uint256[4] memory sizes = [uint256(1), 16, 64, 256];
        uint256[4] memory used;
        string memory json;
        for (uint256 k = 0; k < sizes.length; ++k) {
            uint256 cd;
            (used[k], cd) = _measureBatch(sizes[k], false);
            emit log_named_uint(string.concat("submitBatch same provider n=", vm.toString(sizes[k])), used[k]);
            emit log_named_uint(string.concat("  calldata gas n=", vm.toString(sizes[k])), cd);
            vm.serializeUint(_KEY, string.concat("submitBatch_same_", vm.toString(sizes[k])), used[k]);
            json = vm.serializeUint(_KEY, string.concat("calldata_same_", vm.toString(sizes[k])), cd);
        }
        uint256 perTask = (used[3] - used[0]) / 255;
        uint256 fixedPart = used[0] - perTask;
        emit log_named_uint("per task (fit 1..256)", perTask);
        emit log_named_uint("fixed (fit 1..256)", fixedPart);
        vm.serializeUint(_KEY, "perTask_same", perTask);
        json = vm.serializeUint(_KEY, "fixed_same", fixedPart);
        vm.writeJson(json, "out/gas/contracts-gas-same.json");
        // Budget (DESIGN.md section 6): <= 250k fixed + <= 10k per task.
        assertLe(fixedPart, 250_000);
        assertLe(perTask, 10_000);
    }

    function test_gas_submitBatch_distinctProviders() public {
        uint256[3] memory sizes = [uint256(16), 64, 256];
        uint256[3] memory used;
        string memory json;
        for (uint256 k = 0; k < sizes.length; ++k) {
            (used[k],) = _measureBatch(sizes[k], true);
            emit log_named_uint(string.concat("submitBatch distinct providers n=", vm.toString(sizes[k])), used[k]);
            json = vm.serializeUint(_KEY, string.concat("submitBatch_distinct_", vm.toString(sizes[k])), used[k]);
        }
        uint256 perTask = (used[2] - used[0]) / 240;
        emit log_named_uint("per task, distinct providers (fit 16..256)", perTask);
        json = vm.serializeUint(_KEY, "perTask_distinct", perTask);
        vm.writeJson(json, "out/gas/contracts-gas-distinct.json");
    }
}
