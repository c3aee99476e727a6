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

    /// @dev Settles batches of 1, 16, 64 and 256 tasks and fits gas = fixed + perTask * n through
    /// the 1- and 256-task points; asserts the budget (DESIGN.md section 6): <= 250k fixed and
    /// <= 10k per task, whatever the providers of the leaves.
    function _submitBatchSeries(bool distinct, string memory tag) internal {
        uint256[4] memory sizes = [uint256(1), 16, 64, 256];
        uint256[4] memory used;
        string memory json;
        for (uint256 k = 0; k < sizes.length; ++k) {
            uint256 cd;
            (used[k], cd) = _measureBatch(sizes[k], distinct);
            emit log_named_uint(string.concat("submitBatch ", tag, " n=", vm.toString(sizes[k])), used[k]);
            emit log_named_uint(string.concat("  calldata gas n=", vm.toString(sizes[k])), cd);
            vm.serializeUint(_KEY, string.concat("submitBatch_", tag, "_", vm.toString(sizes[k])), used[k]);
            json = vm.serializeUint(_KEY, string.concat("calldata_", tag, "_", vm.toString(sizes[k])), cd);
        }
        uint256 perTask = (used[3] - used[0]) / 255;
        uint256 fixedPart = used[0] - perTask;
        emit log_named_uint(string.concat("per task, ", tag, " (fit 1..256)"), perTask);
        emit log_named_uint(string.concat("fixed, ", tag, " (fit 1..256)"), fixedPart);
        vm.serializeUint(_KEY, string.concat("perTask_", tag), perTask);
        json = vm.serializeUint(_KEY, string.concat("fixed_", tag), fixedPart);
        vm.writeJson(json, string.concat("out/gas/contracts-gas-", tag, ".json"));
        assertLe(fixedPart, 250_000);
        assertLe(perTask, 10_000);
        // Each batch also within the budget line, not only the fit.
        for (uint256 k = 0; k < sizes.length; ++k) {
            assertLe(used[k], 250_000 + 10_000 * sizes[k]);
        }
    }

    /// All leaves of one provider.
    function test_gas_submitBatch_sameProvider() public {
        _submitBatchSeries(false, "same");
    }

    /// A different provider on every leaf: costs the same as one provider, since settlement no
    /// longer touches provider accounts (each provider claims later with `claimSettled`).
    function test_gas_submitBatch_distinctProviders() public {
        _submitBatchSeries(true, "distinct");
    }

    /// `TaskEscrow.claimSettled` of 1, 16 and 64 settled tasks of one provider (pay sent, collateral
    /// released and reputation counted in one Staking call), each batch settled beforehand.
    function test_gas_claimSettled() public {
        uint256[3] memory sizes = [uint256(1), 16, 64];
        uint256[3] memory used;
        string memory json;
        for (uint256 k = 0; k < sizes.length; ++k) {
            TaskLeaf[] memory leaves = _batch(sizes[k], false);
            _submit(leaves, ROOT_A, _proveBatch(leaves, ROOT_A));
            bytes32[] memory ids = new bytes32[](sizes[k]);
            for (uint256 i = 0; i < ids.length; ++i) {
                ids[i] = leaves[i].taskId;
            }
            uint256 cd = _calldataGas(abi.encodeCall(escrow.claimSettled, (ids)));
            uint256 before = token.balanceOf(provider);
            _coolAll();
            vm.prank(provider);
            (uint256 paid,) = escrow.claimSettled(ids);
            used[k] = _lastGas();
            assertEq(token.balanceOf(provider), before + paid);
            emit log_named_uint(string.concat("claimSettled n=", vm.toString(sizes[k])), used[k]);
            emit log_named_uint(string.concat("  calldata gas n=", vm.toString(sizes[k])), cd);
            vm.serializeUint(_KEY, string.concat("claimSettled_", vm.toString(sizes[k])), used[k]);
            json = vm.serializeUint(_KEY, string.concat("calldata_claim_", vm.toString(sizes[k])), cd);
        }
        uint256 perTask = (used[2] - used[0]) / 63;
        uint256 fixedPart = used[0] - perTask;
        emit log_named_uint("claimSettled per task (fit 1..64)", perTask);
        emit log_named_uint("claimSettled fixed (fit 1..64)", fixedPart);
        vm.serializeUint(_KEY, "perTask_claim", perTask);
        json = vm.serializeUint(_KEY, "fixed_claim", fixedPart);
        vm.writeJson(json, "out/gas/contracts-gas-claim.json");
    }
}
