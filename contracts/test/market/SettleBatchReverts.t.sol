// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MarketTest} from "./MarketTest.sol";
import {ISettleBatch} from "../../interfaces/market/ISettleBatch.sol";
import {RevertingVerifier} from "../mocks/VerifierMocks.sol";

/// @notice settleBatch reverts only on a malformed batch, a bad registry root or an invalid proof.
contract SettleBatchRevertsTest is MarketTest {
    function setUp() public override {
        super.setUp();
        _installBoundVerifier();
        _openBook(poster, 4, BOOK_MAX);
        _openBook(poster2, 4, BOOK_MAX);
    }

    /// A well-formed two-poster, two-provider, two-model, two-terms batch of three leaves.
    function _fixture()
        internal
        view
        returns (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves)
    {
        Item memory c = _item(_order(poster, 0, 1), provider2);
        c.order.modelId = MODEL2;
        c.order.payment = 10e18;
        (h, leaves) = _build(_items3(_item(_order(poster, 0, 0), provider), _item(_order(poster2, 0, 0), provider2), c));
        assert(h.books.length == 2 && h.providers.length == 2 && h.models.length == 2 && h.terms.length == 2);
    }

    function _expectSettleRevert(
        ISettleBatch.BatchHeader memory h,
        ISettleBatch.SettlementLeaf[] memory leaves,
        bytes memory err
    ) internal {
        uint256[8] memory proof;
        vm.expectRevert(err);
        vm.prank(sequencer);
        market.settleBatch(h, leaves, ROOT_A, proof);
    }

    /// Both settleBatch and computePublicInput refuse a malformed batch.
    function _expectMalformed(
        ISettleBatch.BatchHeader memory h,
        ISettleBatch.SettlementLeaf[] memory leaves,
        bytes memory err
    ) internal {
        vm.expectRevert(err);
        market.computePublicInput(h, leaves, ROOT_A);
        _expectSettleRevert(h, leaves, err);
    }

    function _setField(ISettleBatch.SettlementLeaf memory l, uint256 shift, uint256 width, uint256 value)
        internal
        pure
    {
        uint256 mask = ((1 << width) - 1) << shift;
        l.meta = (l.meta & ~mask) | (value << shift);
    }

    function test_settleBatch_wellFormedFixtureSettles() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        uint256[8] memory proof = _boundProof(h, leaves, ROOT_A);
        vm.prank(sequencer);
        (,, uint256 paid) = market.settleBatch(h, leaves, ROOT_A, proof);
        assertEq(paid, 3);
    }

    // ------------------------------------------------------------------ size

    function test_RevertWhen_batchEmpty() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        leaves = new ISettleBatch.SettlementLeaf[](0);
        _expectSettleRevert(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketEmptyBatch.selector));
        vm.expectRevert(ISettleBatch.MarketEmptyBatch.selector);
        market.computePublicInput(h, leaves, ROOT_A);
    }

    function test_RevertWhen_batchTooLarge() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        vm.prank(address(timelock));
        market.setMaxBatchSize(2);
        _expectSettleRevert(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketBatchTooLarge.selector, 3, 2));
        assembly ("memory-safe") {
            mstore(leaves, 2) // drop the last leaf
        }
        uint256[8] memory proof = _boundProof(h, leaves, ROOT_A);
        vm.prank(sequencer);
        (,, uint256 paid) = market.settleBatch(h, leaves, ROOT_A, proof);
        assertEq(paid, 2);
    }

    function test_RevertWhen_batchAboveDefaultMaximum() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        ISettleBatch.SettlementLeaf memory l = leaves[0];
        leaves = new ISettleBatch.SettlementLeaf[](257);
        for (uint256 i = 0; i < 257; ++i) {
            leaves[i] = l;
        }
        _expectSettleRevert(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketBatchTooLarge.selector, 257, 256));
    }

    // ------------------------------------------------------------------ malformed leaves

    function test_RevertWhen_leafHasBitAboveNamedFlag() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        leaves[1].meta |= 1 << 121;
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedLeaf.selector, 1));
    }

    function test_RevertWhen_leafHasTopBit() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        leaves[2].meta |= 1 << 255;
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedLeaf.selector, 2));
    }

    function test_RevertWhen_leafBookIndexOutOfRange() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        _setField(leaves[1], 72, 16, 2);
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedLeaf.selector, 1));
    }

    function test_RevertWhen_leafProviderIndexOutOfRange() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        _setField(leaves[1], 88, 16, 2);
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedLeaf.selector, 1));
    }

    function test_RevertWhen_leafModelIndexOutOfRange() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        _setField(leaves[1], 104, 8, 2);
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedLeaf.selector, 1));
    }

    function test_RevertWhen_leafTermsIndexOutOfRange() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        _setField(leaves[1], 112, 8, 2);
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedLeaf.selector, 1));
    }

    /// The last valid index of each table is accepted (the leaf is rebuilt with other entries,
    /// so it settles as a different order; here it only has to hash).
    function test_computePublicInput_lastTableIndicesAccepted() public view {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        ISettleBatch.SettlementLeaf[] memory ls = new ISettleBatch.SettlementLeaf[](1);
        ls[0] = leaves[0];
        ls[0].meta |= (uint256(1) << 72) | (uint256(1) << 88) | (uint256(1) << 104) | (uint256(1) << 112) | (1 << 120);
        market.computePublicInput(h, ls, ROOT_A);
    }

    // ------------------------------------------------------------------ tables

    function test_RevertWhen_bookTableUnsorted() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        (h.books[0], h.books[1]) = (h.books[1], h.books[0]);
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedBookTable.selector, 1));
    }

    function test_RevertWhen_bookTableDuplicate() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        h.books[1] = h.books[0];
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedBookTable.selector, 1));
    }

    /// Books of one poster sort by book id.
    function test_RevertWhen_bookTableSamePosterUnsorted() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        h.books[0] = ISettleBatch.BookRef({poster: poster, book: 1});
        h.books[1] = ISettleBatch.BookRef({poster: poster, book: 0});
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedBookTable.selector, 1));
    }

    function test_RevertWhen_bookTableZeroPoster() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        h.books[0] = ISettleBatch.BookRef({poster: address(0), book: 0});
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedBookTable.selector, 0));
        // A zero poster sorts first even with a non-zero book id: still refused.
        h.books[0] = ISettleBatch.BookRef({poster: address(0), book: 1});
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedBookTable.selector, 0));
    }

    function test_RevertWhen_providerTableUnsorted() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        (h.providers[0], h.providers[1]) = (h.providers[1], h.providers[0]);
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedProviderTable.selector, 1));
    }

    function test_RevertWhen_providerTableDuplicate() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        h.providers[1] = h.providers[0];
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedProviderTable.selector, 1));
    }

    function test_RevertWhen_providerTableZero() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        h.providers[0] = address(0);
        _expectMalformed(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketMalformedProviderTable.selector, 0));
    }

    // ------------------------------------------------------------------ registry root

    function test_RevertWhen_registryRootUnknown() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        uint256[8] memory proof = _boundProof(h, leaves, ROOT_B);
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketUnknownRegistryRoot.selector, ROOT_B, ROOT_A));
        vm.prank(sequencer);
        market.settleBatch(h, leaves, ROOT_B, proof);
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketUnknownRegistryRoot.selector, bytes32(0), ROOT_A));
        vm.prank(sequencer);
        market.settleBatch(h, leaves, bytes32(0), proof);
    }

    function test_RevertWhen_registryRootExpired() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        vm.prank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        uint256 acceptedUntil = block.timestamp + registry.rootGracePeriod();
        vm.warp(acceptedUntil);
        uint256[8] memory proof = _boundProof(h, leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketRegistryRootExpired.selector, ROOT_A, acceptedUntil));
        vm.prank(sequencer);
        market.settleBatch(h, leaves, ROOT_A, proof);
    }

    /// A root revoked inside its grace window is refused at once, for good.
    function test_RevertWhen_registryRootRevoked() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        vm.startPrank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        registry.revokeRoot(ROOT_A);
        registry.setRootGracePeriod(30 days);
        vm.stopPrank();
        uint256[8] memory proof = _boundProof(h, leaves, ROOT_A);
        vm.expectRevert(
            abi.encodeWithSelector(ISettleBatch.MarketRegistryRootExpired.selector, ROOT_A, block.timestamp)
        );
        vm.prank(sequencer);
        market.settleBatch(h, leaves, ROOT_A, proof);
    }

    /// A replaced root is accepted until its grace window ends.
    function test_settleBatch_graceRootAccepted() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        vm.prank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        skip(registry.rootGracePeriod() - 1);
        Item[] memory items = _items1(_item(_order(poster, 0, 2), provider));
        (ISettleBatch.BatchHeader memory hm, ISettleBatch.SettlementLeaf[] memory lm) = _build(items);
        uint256[8] memory proof = _boundProof(hm, lm, ROOT_A);
        vm.prank(sequencer);
        (,, uint256 paid) = market.settleBatch(hm, lm, ROOT_A, proof);
        assertEq(paid, 1);
    }

    // ------------------------------------------------------------------ proof

    function test_RevertWhen_proofInvalid() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        (, uint256 publicInput,) = market.computePublicInput(h, leaves, ROOT_A);
        uint256[8] memory proof = boundVerifier.proofFor(publicInput + 1);
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketInvalidProof.selector, publicInput));
        vm.prank(sequencer);
        market.settleBatch(h, leaves, ROOT_A, proof);
    }

    /// A proof of one batch does not settle a batch differing in one leaf's order.
    function test_RevertWhen_proofOfAnotherBatch() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        uint256[8] memory proof = _boundProof(h, leaves, ROOT_A);
        leaves[0].inputCommitment = keccak256("other input");
        (, uint256 publicInput,) = market.computePublicInput(h, leaves, ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(ISettleBatch.MarketInvalidProof.selector, publicInput));
        vm.prank(sequencer);
        market.settleBatch(h, leaves, ROOT_A, proof);
    }

    function test_RevertWhen_verifierReverts() public {
        (ISettleBatch.BatchHeader memory h, ISettleBatch.SettlementLeaf[] memory leaves) = _fixture();
        _forceVerifier(address(new RevertingVerifier()));
        (, uint256 publicInput,) = market.computePublicInput(h, leaves, ROOT_A);
        _expectSettleRevert(h, leaves, abi.encodeWithSelector(ISettleBatch.MarketInvalidProof.selector, publicInput));
        assertFalse(market.nonceUsed(poster, 0));
    }
}
