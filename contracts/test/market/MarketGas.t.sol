// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Vm} from "forge-std/Vm.sol";

import {MarketTest} from "./MarketTest.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {Order} from "../../libraries/OrderLib.sol";

/// @notice Gas of a task's whole on-chain life in the v2 market, with the real Groth16 verifier
/// (the devnet test key): deposits (one book per poster) and earnings withdrawals amortized over the
/// batch, settlement of one batch, transaction base cost and calldata included. Calldata is priced
/// as the chain prices it since Prague (EIP-7623): a transaction pays the larger of 21,000 + 4/16 gas
/// per zero/non-zero byte + execution and 21,000 + 10/40 gas per zero/non-zero byte. Every measured
/// call starts with the contracts cooled (`vm.cool`), as in a fresh transaction. Figures are logged
/// (-vv) and written to out/gas/market-gas.json; docs/BENCHMARKS.md records them.
contract MarketGasTest is MarketTest {
    string internal constant _KEY = "market-gas";
    uint256 internal constant _TX_BASE = 21_000;

    function setUp() public override {
        super.setUp();
        _bond(provider, 10_000e18);
        _bond(provider2, 10_000e18);
        vm.createDir("out/gas", true);
    }

    function _coolAll() internal {
        vm.cool(address(token));
        vm.cool(address(registry));
        vm.cool(address(market));
        vm.cool(address(verifier));
    }

    /// @dev Gas a transaction calling with `data` pays when its execution used `execution`.
    function _txGas(bytes memory data, uint256 execution) internal pure returns (uint256) {
        uint256 zeros;
        for (uint256 i = 0; i < data.length; ++i) {
            if (data[i] == 0) ++zeros;
        }
        uint256 nonZeros = data.length - zeros;
        uint256 standard = _TX_BASE + 4 * zeros + 16 * nonZeros + execution;
        uint256 floor = _TX_BASE + 10 * (zeros + 4 * nonZeros);
        return standard > floor ? standard : floor;
    }

    function _lastGas() internal view returns (uint256) {
        Vm.Gas memory g = vm.lastCallGas();
        return g.gasTotalUsed;
    }

    /// @dev `n` orders from two posters' books, alternating, proven by two providers, alternating.
    function _items(uint256 n, uint32 bookA, uint32 bookB, uint32 firstIndex)
        internal
        view
        returns (Item[] memory items)
    {
        items = new Item[](n);
        for (uint256 i = 0; i < n; ++i) {
            bool even = i % 2 == 0;
            Order memory o = _order(even ? poster : poster2, even ? bookA : bookB, firstIndex + uint32(i / 2));
            items[i] = _item(o, i % 4 < 2 ? provider : provider2);
        }
    }

    /// @dev Settles one batch of `n` (as the sequencer) and returns its transaction gas.
    function _settleTx(uint256 n, uint32 bookA, uint32 bookB, uint32 firstIndex)
        internal
        returns (uint256 txGas, uint256 execution)
    {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) =
            _build(_items(n, bookA, bookB, firstIndex));
        uint256[8] memory proof = _proveMarketBatch(h, leaves, ROOT_A);
        bytes memory data = abi.encodeCall(market.settleBatch, (h, leaves, ROOT_A, proof));
        _coolAll();
        vm.prank(sequencer);
        (,, uint256 paid) = market.settleBatch(h, leaves, ROOT_A, proof);
        execution = _lastGas();
        assertEq(paid, n, "every order paid");
        txGas = _txGas(data, execution);
    }

    /// The whole on-chain life of a task at 256 tasks a batch (two posters, two providers), in
    /// steady state: each poster's book holds 1,024 orders (one deposit per 1,024 tasks), the
    /// measured batch is the posters' and providers' second (their nonce words and earnings slots
    /// already in use, as for any returning user), and each provider withdraws its earnings after
    /// every batch. Per task: 2 * openBook * 256 /
    /// 1,024 + settleBatch / 256 + 2 * withdrawEarnings / 256. Budget (DESIGN.md section 8):
    /// <= 10,000 gas. The first batch is reported too.
    function test_gas_taskLifeAt256() public {
        uint256 n = 256;
        uint256 capacity = 1024;
        _coolAll();
        vm.prank(poster);
        uint32 bookA = market.openBook(capacity, BOOK_MAX);
        uint256 openTx = _txGas(abi.encodeCall(market.openBook, (capacity, BOOK_MAX)), _lastGas());
        uint32 bookB = _openBook(poster2, capacity, BOOK_MAX);

        (uint256 firstTx,) = _settleTx(n, bookA, bookB, 0);
        uint256 firstWithdraw = _withdrawBoth();
        (uint256 settleTx, uint256 settleExec) = _settleTx(n, bookA, bookB, uint32(n / 2));
        uint256 withdrawTx = _withdrawBoth();

        uint256 deposits = 2 * openTx * n / capacity;
        uint256 perTask = (deposits + settleTx + withdrawTx) / n;
        uint256 perTaskFirst = (deposits + firstTx + firstWithdraw) / n;
        emit log_named_uint("openBook, 1,024 orders (tx)", openTx);
        emit log_named_uint("settleBatch n=256, first batch (tx)", firstTx);
        emit log_named_uint("settleBatch n=256, steady (tx)", settleTx);
        emit log_named_uint("settleBatch n=256, steady (execution)", settleExec);
        emit log_named_uint("withdrawEarnings x2 (tx)", withdrawTx);
        emit log_named_uint("task life per task at 256, first batch", perTaskFirst);
        emit log_named_uint("task life per task at 256, steady", perTask);
        vm.serializeUint(_KEY, "openBook_tx", openTx);
        vm.serializeUint(_KEY, "settleBatch_256_first_tx", firstTx);
        vm.serializeUint(_KEY, "settleBatch_256_tx", settleTx);
        vm.serializeUint(_KEY, "settleBatch_256_execution", settleExec);
        vm.serializeUint(_KEY, "withdrawEarnings_x2_tx", withdrawTx);
        vm.serializeUint(_KEY, "perTask_256_first", perTaskFirst);
        string memory json = vm.serializeUint(_KEY, "perTask_256", perTask);
        vm.writeJson(json, "out/gas/market-gas.json");
        assertLe(perTask, 10_000);
    }

    function _withdrawBoth() internal returns (uint256 txGas) {
        address[2] memory provs = [provider, provider2];
        for (uint256 i = 0; i < 2; ++i) {
            _coolAll();
            vm.prank(provs[i]);
            market.withdrawEarnings();
            txGas += _txGas(abi.encodeCall(market.withdrawEarnings, ()), _lastGas());
        }
    }

    /// Settlement transactions of 1, 16, 64 and 256 tasks, fitted as fixed + perTask * n through
    /// the 1- and 256-task points.
    function test_gas_settleBatchSeries() public {
        uint32 bookA = _openBook(poster, 1000, BOOK_MAX);
        uint32 bookB = _openBook(poster2, 1000, BOOK_MAX);
        uint256[4] memory sizes = [uint256(1), 16, 64, 256];
        uint256[4] memory used;
        uint32 next;
        for (uint256 k = 0; k < sizes.length; ++k) {
            (used[k],) = _settleTx(sizes[k], bookA, bookB, next);
            next += uint32(sizes[k]);
            emit log_named_uint(string.concat("settleBatch tx n=", vm.toString(sizes[k])), used[k]);
        }
        uint256 perTask = (used[3] - used[0]) / 255;
        emit log_named_uint("settleBatch per task (fit 1..256)", perTask);
        emit log_named_uint("settleBatch fixed (fit 1..256)", used[0] - perTask);
    }
}
