// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketTest} from "./MarketTest.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {Order, OrderLib} from "../../libraries/OrderLib.sol";
import {TaskLeaf, TaskLeafLib} from "../../libraries/TaskLeaf.sol";
import {TaskMarket} from "../../market/TaskMarket.sol";
import {TaskLeafHarness} from "../TaskLeaf.t.sol";

/// @notice Exposes OrderLib's internal functions.
contract OrderLibHarness {
    function orderTypehash() external pure returns (bytes32) {
        return OrderLib.ORDER_TYPEHASH;
    }

    function acceptanceTypehash() external pure returns (bytes32) {
        return OrderLib.ACCEPTANCE_TYPEHASH;
    }

    function structHash(Order calldata order) external pure returns (bytes32) {
        return OrderLib.structHash(order);
    }

    function acceptanceStructHash(bytes32 orderHash) external pure returns (bytes32) {
        return OrderLib.acceptanceStructHash(orderHash);
    }

    function nonceOf(uint32 book, uint32 index) external pure returns (uint64) {
        return OrderLib.nonceOf(book, index);
    }
}

/// @notice OrderLib's hashes, the literals BatchSettlement's assembly hard-codes (checked through
/// their effects, as they are private), and one EIP-712 test vector shared with the Rust side
/// (chain/src/market/order.rs uses the same order).
contract OrderLibTest is MarketTest {
    OrderLibHarness internal lib;

    /// The pinned vector below was computed independently of Solidity, with js-sha3 from
    /// node_modules (`NODE_PATH=node_modules node -e 'const {keccak256} = require("js-sha3"); ...'`):
    ///   type hashes: keccak256 of the type strings;
    ///   struct hash: keccak256 over the 32-byte big-endian words [ORDER_TYPEHASH, poster, provider,
    ///     modelId, inputCommitment, payment, collateral, deadline, nonce, slashBps, posterShareBps];
    ///   domain separator: keccak256(keccak256("EIP712Domain(string name,string version,uint256
    ///     chainId,address verifyingContract)") ‖ keccak256("TensorGrid TaskMarket") ‖
    ///     keccak256("2") ‖ uint256(31337) ‖ 0x1111…11);
    ///   digests: keccak256(0x1901 ‖ domain separator ‖ struct hash); the acceptance struct hash is
    ///     keccak256(ACCEPTANCE_TYPEHASH ‖ order digest).
    bytes32 internal constant ORDER_TYPEHASH_JS = 0xe50d500cb6fc033920608971fffab05a4116854e4dfd08f8dc5b27d118132525;
    bytes32 internal constant ACCEPTANCE_TYPEHASH_JS =
        0x5a719da0f4a4586957e5f59917dfd60ddd8136d4d9f3fa905a76dd7b4790852f;
    bytes32 internal constant VECTOR_STRUCT_HASH = 0x2c9a59f7294072d69a019d29ebe355de293d40ea42655098af1079cf895f1477;
    bytes32 internal constant VECTOR_DOMAIN_SEPARATOR =
        0xfc27030687bc6e11aa86f469f5fcc48e5a3421f085906f7bbab8ec190038b867;
    bytes32 internal constant VECTOR_ORDER_DIGEST = 0x6d7b0a23cf6a4a4f1c5db453255d809141703720207757c77c2d87eef91d38a8;
    bytes32 internal constant VECTOR_ACCEPTANCE_STRUCT_HASH =
        0xb432843d3a5cc464b56b3e0ac10041c4e08c868378cb56c742e1e615ccc3e370;
    bytes32 internal constant VECTOR_ACCEPTANCE_DIGEST =
        0x07b8c3d465bad4df95d29fcde579270a6c2383f329a27803d17fb1be3bdef486;
    address internal constant VECTOR_MARKET = 0x1111111111111111111111111111111111111111;

    function setUp() public override {
        super.setUp();
        lib = new OrderLibHarness();
    }

    /// The fixed order of the vector (chain/src/market/order.rs builds the same one): anvil account
    /// 1 as poster (the Rust test's key 0x59c6…690d), open to any provider, book 1 index 7.
    /// Nothing depends on makeAddr.
    function _vectorOrder() internal pure returns (Order memory) {
        return Order({
            poster: 0x70997970C51812dc3A010C7d01b50e0d17dc79C8,
            provider: address(0),
            modelId: bytes32(0x0202020202020202020202020202020202020202020202020202020202020202),
            inputCommitment: bytes32(0x0303030303030303030303030303030303030303030303030303030303030303),
            payment: 50e18,
            collateral: 100e18,
            deadline: 1_800_000_000,
            nonce: (uint64(1) << 32) | 7,
            slashBps: 5_000,
            posterShareBps: 5_000
        });
    }

    // ------------------------------------------------------------------ OrderLib

    function test_ORDER_TYPEHASH_matchesTypeString() public view {
        assertEq(
            lib.orderTypehash(),
            keccak256(
                "Order(address poster,address provider,bytes32 modelId,bytes32 inputCommitment,uint96 payment,uint96 collateral,uint40 deadline,uint64 nonce,uint16 slashBps,uint16 posterShareBps)"
            )
        );
        assertEq(lib.orderTypehash(), ORDER_TYPEHASH_JS);
    }

    function test_ACCEPTANCE_TYPEHASH_matchesTypeString() public view {
        assertEq(lib.acceptanceTypehash(), keccak256("Acceptance(bytes32 order)"));
        assertEq(lib.acceptanceTypehash(), ACCEPTANCE_TYPEHASH_JS);
    }

    function test_structHash_pinnedVector() public view {
        assertEq(vm.addr(0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d), _vectorOrder().poster);
        assertEq(lib.structHash(_vectorOrder()), VECTOR_STRUCT_HASH);
        assertEq(lib.acceptanceStructHash(VECTOR_ORDER_DIGEST), VECTOR_ACCEPTANCE_STRUCT_HASH);
    }

    /// The market's own hashOrder/hashAcceptance give the vector's digests when its code runs at
    /// the vector's address on chain 31337 (OpenZeppelin's EIP712 rebuilds the domain separator
    /// for the executing address).
    function test_hashOrder_pinnedVector() public {
        vm.chainId(31337);
        vm.etch(VECTOR_MARKET, address(market).code);
        TaskMarket atVector = TaskMarket(VECTOR_MARKET);
        (, string memory name, string memory version, uint256 chainId, address verifyingContract,,) =
            atVector.eip712Domain();
        assertEq(name, "TensorGrid TaskMarket");
        assertEq(version, "2");
        assertEq(chainId, 31337);
        assertEq(verifyingContract, VECTOR_MARKET);
        bytes32 expectedDigest = keccak256(abi.encodePacked(hex"1901", VECTOR_DOMAIN_SEPARATOR, VECTOR_STRUCT_HASH));
        assertEq(expectedDigest, VECTOR_ORDER_DIGEST);
        assertEq(atVector.hashOrder(_vectorOrder()), VECTOR_ORDER_DIGEST);
        assertEq(atVector.hashAcceptance(VECTOR_ORDER_DIGEST), VECTOR_ACCEPTANCE_DIGEST);
    }

    function test_nonceOf_packsBookAndIndex() public view {
        assertEq(lib.nonceOf(1, 7), 0x1_0000_0007);
        assertEq(lib.nonceOf(0, 0), 0);
        assertEq(lib.nonceOf(type(uint32).max, type(uint32).max), type(uint64).max);
    }

    function testFuzz_structHash_isAbiEncodedFields(Order memory o) public view {
        bytes32 expected = keccak256(
            abi.encode(
                ORDER_TYPEHASH_JS,
                o.poster,
                o.provider,
                o.modelId,
                o.inputCommitment,
                o.payment,
                o.collateral,
                o.deadline,
                o.nonce,
                o.slashBps,
                o.posterShareBps
            )
        );
        assertEq(lib.structHash(o), expected);
    }

    // ------------------------------------------------------------------ BatchSettlement literals

    /// The settlement's hard-coded order typehash and EIP-712 assembly agree with OrderLib
    /// (through hashOrder) for any terms, deadline, book, index, model, input and named provider.
    function testFuzz_computePublicInput_orderHashesMatchHashOrder(
        uint96 payment,
        uint96 collateral,
        uint40 deadline,
        uint32 bookId,
        uint32 index,
        uint16 slashBps,
        uint16 share,
        bytes32 input,
        bool named,
        bool secondModel
    ) public view {
        Order memory a = _order(poster, bookId, index);
        a.payment = payment;
        a.collateral = collateral;
        a.deadline = deadline;
        a.slashBps = slashBps;
        a.posterShareBps = share;
        a.inputCommitment = input;
        a.modelId = secondModel ? MODEL2 : MODEL;
        if (named) a.provider = provider2;
        Order memory b = _order(poster2, 3, 9); // a second book, provider and terms entry
        Item[] memory items = _items2(_item(a, provider2), _item(b, provider));
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        (,, bytes32[] memory hashes) = market.computePublicInput(h, leaves, ROOT_A);
        assertEq(hashes[0], market.hashOrder(a));
        assertEq(hashes[1], market.hashOrder(b));
    }

    /// The task leaves are sha256(0x00 ‖ orderHash ‖ model ‖ input ‖ output ‖ provider20), their
    /// RFC 6962 root the batch root, and the public input sha256(root ‖ registryRoot ‖ uint64 n)
    /// masked to 253 bits (docs/encodings.md), recomputed here without the library.
    function test_computePublicInput_bindsTaskLeavesRootAndCount() public view {
        Item[] memory items = _items3(
            _item(_order(poster, 0, 0), provider),
            _item(_order(poster2, 0, 1), provider2),
            _item(_order(poster, 0, 2), provider2)
        );
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        (bytes32 root, uint256 publicInput, bytes32[] memory hashes) = market.computePublicInput(h, leaves, ROOT_B);
        bytes32[3] memory l;
        for (uint256 i = 0; i < 3; ++i) {
            Order memory o = items[i].order;
            assertEq(hashes[i], market.hashOrder(o));
            l[i] = sha256(
                abi.encodePacked(
                    bytes1(0x00), hashes[i], o.modelId, o.inputCommitment, items[i].output, items[i].provider
                )
            );
        }
        bytes32 expectedRoot =
            sha256(abi.encodePacked(bytes1(0x01), sha256(abi.encodePacked(bytes1(0x01), l[0], l[1])), l[2]));
        assertEq(root, expectedRoot);
        uint256 expectedInput =
            uint256(sha256(abi.encodePacked(expectedRoot, ROOT_B, uint64(3)))) & TaskLeafLib.PUBLIC_INPUT_MASK;
        assertEq(publicInput, expectedInput);
    }

    /// The market's batch root is TaskLeafLib's reference `batchRoot` (the calldata path the
    /// vectors of TaskLeaf.t.sol pin) over task leaves whose task id is the order digest.
    function test_computePublicInput_rootEqualsTaskLeafReference() public {
        TaskLeafHarness ref = new TaskLeafHarness();
        Item[] memory items = new Item[](5);
        for (uint32 i = 0; i < 5; ++i) {
            items[i] = _item(_order(i % 2 == 0 ? poster : poster2, 0, i), i < 3 ? provider : provider2);
        }
        items[4].order.modelId = MODEL2;
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        (bytes32 root, uint256 publicInput, bytes32[] memory hashes) = market.computePublicInput(h, leaves, ROOT_A);
        TaskLeaf[] memory taskLeaves = new TaskLeaf[](5);
        for (uint256 i = 0; i < 5; ++i) {
            taskLeaves[i] = TaskLeaf({
                taskId: hashes[i],
                modelId: items[i].order.modelId,
                inputCommitment: items[i].order.inputCommitment,
                outputCommitment: items[i].output,
                provider: items[i].provider
            });
        }
        assertEq(root, ref.batchRoot(taskLeaves));
        assertEq(publicInput, ref.publicInput(root, ROOT_A, 5));
    }

    /// expectEmit matches topic 0, so these prove the OrderSkipped literal is the event's topic.
    function test_settleBatch_orderSkippedTopic() public {
        _installBoundVerifier();
        _openBook(poster, 4, BOOK_MAX);
        Order memory o = _order(poster, 0, 0);
        vm.warp(o.deadline + 1);
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderSkipped(_hash(o), ISettleBatch.SkipReason.DeadlinePassed);
        _settleBound(_items1(_item(o, provider)), sequencer);
        assertEq(
            keccak256("OrderSkipped(bytes32,uint8)"), 0x3838114a09af695e25f49b332b10a4ad1764d52e61af5dd023af076c4c71cc70
        );
    }

    function test_settleBatch_orderUnpaidTopic() public {
        _installBoundVerifier();
        _openBook(poster, 1, BOOK_MAX);
        Order memory o = _order(poster, 0, 1); // index 1 of a one-order book
        vm.expectEmit(address(market));
        emit ISettleBatch.OrderUnpaid(_hash(o), ISettleBatch.UnpaidReason.IndexOutOfBook);
        _settleBound(_items1(_item(o, provider)), sequencer);
        assertEq(
            keccak256("OrderUnpaid(bytes32,uint8)"), 0x777df19e739b5148ef8a249ef9a6a6fc590b43f71c7b931dea0c966eeeb1ba59
        );
    }

    /// The assembly's revert data is exactly MarketMalformedLeaf(index) (selector literal and
    /// argument).
    function test_RevertWhen_leafMalformed_revertDataIsTheCustomError() public {
        assertEq(ISettleBatch.MarketMalformedLeaf.selector, bytes4(0x98333124));
        Item[] memory items = _items2(_item(_order(poster, 0, 0), provider), _item(_order(poster, 0, 1), provider));
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _build(items);
        leaves[1].meta |= 1 << 121;
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketMalformedLeaf.selector, 1));
        market.computePublicInput(h, leaves, ROOT_A);
    }
}
