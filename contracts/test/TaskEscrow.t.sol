// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Errors} from "@openzeppelin/contracts/interfaces/draft-IERC6093.sol";

import {TGridTest} from "./utils/TGridTest.sol";
import {ITaskEscrow} from "../interfaces/ITaskEscrow.sol";
import {IStaking} from "../interfaces/IStaking.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {TaskEscrow} from "../escrow/TaskEscrow.sol";
import {TaskLeaf} from "../libraries/TaskLeaf.sol";

contract TaskEscrowTest is TGridTest {
    bytes32 private constant _PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");

    function setUp() public override {
        super.setUp();
        _stake(provider, STAKE);
    }

    // ------------------------------------------------------------------ post

    function test_postTask_escrowsRewardAndStoresTask() public {
        uint256 deadline = block.timestamp + 1 days;
        bytes32 expectedId =
            keccak256(abi.encode(block.chainid, address(escrow), poster, uint256(0), blockhash(block.number - 1)));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskPosted(expectedId, poster, MODEL, INPUT, PAYMENT, FEE_TIP, deadline);
        bytes32 id = _post(poster, MODEL, INPUT, PAYMENT, FEE_TIP, deadline);
        assertEq(id, expectedId);
        assertEq(escrow.postNonce(poster), 1);
        assertEq(token.balanceOf(address(escrow)), PAYMENT + FEE_TIP);
        ITaskEscrow.Task memory t = escrow.task(id);
        assertEq(uint8(t.status), uint8(ITaskEscrow.TaskStatus.Posted));
        assertEq(t.deadline, deadline);
        assertEq(t.reward, PAYMENT + FEE_TIP);
        assertEq(t.collateral, 0);
        assertEq(t.poster, poster);
        assertEq(t.payment, PAYMENT);
        assertEq(t.provider, address(0));
        assertEq(t.binding, keccak256(abi.encode(MODEL, INPUT)));
    }

    function test_RevertWhen_postTaskIdAlreadyUsed() public {
        // A collision cannot happen short of keccak256 breaking; simulate one by writing the next
        // task id's storage (mapping `_tasks` is at slot 5, see `forge inspect TaskEscrow storageLayout`).
        bytes32 next = keccak256(
            abi.encode(block.chainid, address(escrow), poster, escrow.postNonce(poster), blockhash(block.number - 1))
        );
        bytes32 coreSlot = keccak256(abi.encode(next, uint256(5)));
        vm.store(address(escrow), coreSlot, bytes32(uint256(1)));
        assertEq(uint8(_status(next)), uint8(ITaskEscrow.TaskStatus.Posted)); // the slot is right
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskExists.selector, next));
        _post(poster);
    }

    function test_postTask_idsUniquePerNonceAndBlock() public {
        bytes32 a = _post(poster);
        bytes32 b = _post(poster);
        bytes32 c = _post(poster2);
        vm.roll(block.number + 1);
        bytes32 d = _post(poster);
        assertTrue(a != b && a != c && b != c && d != a && d != b);
        assertEq(escrow.postNonce(poster), 3);
    }

    function test_postTaskWithPermit_paysWithoutApproval() public {
        (address signer, uint256 key) = makeAddrAndKey("permit poster");
        assertTrue(token.transfer(signer, 100e18));
        uint256 reward = PAYMENT + FEE_TIP;
        (uint8 v, bytes32 r, bytes32 s) = _signPermit(key, signer, reward, block.timestamp + 1 hours);
        vm.prank(signer);
        bytes32 id = escrow.postTaskWithPermit(
            MODEL, INPUT, PAYMENT, FEE_TIP, block.timestamp + 1 days, block.timestamp + 1 hours, v, r, s
        );
        assertEq(escrow.task(id).poster, signer);
        assertEq(token.balanceOf(signer), 100e18 - reward);
        assertEq(token.allowance(signer, address(escrow)), 0);
    }

    function test_postTaskWithPermit_frontRunPermitStillPosts() public {
        (address signer, uint256 key) = makeAddrAndKey("permit poster");
        assertTrue(token.transfer(signer, 100e18));
        uint256 reward = PAYMENT + FEE_TIP;
        (uint8 v, bytes32 r, bytes32 s) = _signPermit(key, signer, reward, block.timestamp + 1 hours);
        // Someone submits the permit first; the nonce is used, the allowance is set.
        token.permit(signer, address(escrow), reward, block.timestamp + 1 hours, v, r, s);
        vm.prank(signer);
        bytes32 id = escrow.postTaskWithPermit(
            MODEL, INPUT, PAYMENT, FEE_TIP, block.timestamp + 1 days, block.timestamp + 1 hours, v, r, s
        );
        assertEq(uint8(_status(id)), uint8(ITaskEscrow.TaskStatus.Posted));
    }

    function test_RevertWhen_postTaskWithBadPermitAndNoAllowance() public {
        (address signer,) = makeAddrAndKey("permit poster");
        assertTrue(token.transfer(signer, 100e18));
        (, uint256 otherKey) = makeAddrAndKey("someone else");
        uint256 reward = PAYMENT + FEE_TIP;
        (uint8 v, bytes32 r, bytes32 s) = _signPermit(otherKey, signer, reward, block.timestamp + 1 hours);
        vm.expectRevert(
            abi.encodeWithSelector(IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), 0, reward)
        );
        vm.prank(signer);
        escrow.postTaskWithPermit(
            MODEL, INPUT, PAYMENT, FEE_TIP, block.timestamp + 1 days, block.timestamp + 1 hours, v, r, s
        );
    }

    function test_RevertWhen_postTaskZeroPayment() public {
        vm.expectRevert(ITaskEscrow.TaskEscrowZeroPayment.selector);
        _post(poster, MODEL, INPUT, 0, FEE_TIP, block.timestamp + 1 days);
    }

    function test_RevertWhen_postTaskRewardAboveUint96() public {
        uint256 p = type(uint96).max;
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowRewardTooLarge.selector, p, 1));
        _post(poster, MODEL, INPUT, p, 1, block.timestamp + 1 days);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowRewardTooLarge.selector, type(uint256).max, 0));
        _post(poster, MODEL, INPUT, type(uint256).max, 0, block.timestamp + 1 days);
    }

    function test_RevertWhen_postTaskDeadlineTooSoon() public {
        uint256 d = block.timestamp + 10 minutes - 1;
        vm.expectRevert(
            abi.encodeWithSelector(
                ITaskEscrow.TaskEscrowDeadlineOutOfBounds.selector,
                d,
                block.timestamp + 10 minutes,
                block.timestamp + 30 days
            )
        );
        _post(poster, MODEL, INPUT, PAYMENT, 0, d);
    }

    function test_RevertWhen_postTaskDeadlineTooLate() public {
        uint256 d = block.timestamp + 30 days + 1;
        vm.expectRevert(
            abi.encodeWithSelector(
                ITaskEscrow.TaskEscrowDeadlineOutOfBounds.selector,
                d,
                block.timestamp + 10 minutes,
                block.timestamp + 30 days
            )
        );
        _post(poster, MODEL, INPUT, PAYMENT, 0, d);
    }

    function test_RevertWhen_postTaskUnregisteredModel() public {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowModelNotRegistered.selector, MODEL2));
        _post(poster, MODEL2, INPUT, PAYMENT, 0, block.timestamp + 1 days);
    }

    function test_RevertWhen_postTaskDeregisteredModel() public {
        vm.prank(address(timelock));
        registry.deregisterModel(MODEL, ROOT_B);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowModelNotRegistered.selector, MODEL));
        _post(poster);
    }

    function test_RevertWhen_postTaskWithoutAllowance() public {
        vm.prank(poster);
        token.approve(address(escrow), 0);
        vm.expectRevert(
            abi.encodeWithSelector(
                IERC20Errors.ERC20InsufficientAllowance.selector, address(escrow), 0, PAYMENT + FEE_TIP
            )
        );
        _post(poster);
    }

    function testFuzz_postTask_amountsAndDeadlines(uint96 payment, uint96 tip, uint32 delay) public {
        uint256 p = bound(payment, 1, 400_000e18);
        uint256 f = bound(tip, 0, 400_000e18);
        uint256 d = block.timestamp + bound(delay, 10 minutes, 30 days);
        uint256 before = token.balanceOf(poster);
        bytes32 id = _post(poster, MODEL, INPUT, p, f, d);
        ITaskEscrow.Task memory t = escrow.task(id);
        assertEq(t.reward, p + f);
        assertEq(t.payment, p);
        assertEq(t.deadline, d);
        assertEq(token.balanceOf(poster), before - p - f);
        assertEq(token.balanceOf(address(escrow)), p + f);
    }

    // ------------------------------------------------------------------ accept

    function test_acceptTask_locksCollateral() public {
        bytes32 id = _post(poster);
        uint256 collateral = PAYMENT + FEE_TIP; // collateralBps = 100%
        assertEq(escrow.collateralFor(PAYMENT + FEE_TIP), collateral);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskAccepted(id, provider, collateral);
        _accept(provider, id);
        ITaskEscrow.Task memory t = escrow.task(id);
        assertEq(uint8(t.status), uint8(ITaskEscrow.TaskStatus.Accepted));
        assertEq(t.collateral, collateral);
        assertEq(t.provider, provider);
        assertEq(t.binding, keccak256(abi.encode(keccak256(abi.encode(MODEL, INPUT)), provider)));
        assertEq(staking.account(provider).locked, collateral);
    }

    function test_acceptTask_minimumCollateral() public {
        bytes32 id = _post(poster, MODEL, INPUT, 1e18, 0, block.timestamp + 1 days);
        _accept(provider, id);
        assertEq(escrow.task(id).collateral, 10e18);
    }

    function testFuzz_acceptTask_collateralRule(uint96 payment, uint32 bps, uint96 minC) public {
        uint256 p = bound(payment, 1, 100_000e18);
        uint256 b = bound(bps, 0, 100_000);
        uint256 m = bound(minC, 0, 1_000e18);
        vm.prank(address(timelock));
        escrow.setCollateralParameters(b, m);
        bytes32 id = _post(poster, MODEL, INPUT, p, 0, block.timestamp + 1 days);
        uint256 expected = p * b / 10_000;
        if (expected < m) expected = m;
        _stake(provider2, expected + 100e18);
        _accept(provider2, id);
        assertEq(escrow.task(id).collateral, expected);
        assertEq(staking.account(provider2).locked, expected);
    }

    function test_RevertWhen_acceptTaskTwice() public {
        bytes32 id = _post(poster);
        _accept(provider, id);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, ITaskEscrow.TaskStatus.Accepted)
        );
        _accept(provider, id);
    }

    function test_RevertWhen_acceptUnknownTask() public {
        bytes32 id = keccak256("nope");
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, ITaskEscrow.TaskStatus.None)
        );
        _accept(provider, id);
    }

    function test_RevertWhen_acceptTaskAtDeadline() public {
        uint256 d = block.timestamp + 1 days;
        bytes32 id = _post(poster, MODEL, INPUT, PAYMENT, 0, d);
        vm.warp(d);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowDeadlinePassed.selector, id, d));
        _accept(provider, id);
    }

    function test_RevertWhen_acceptTaskWithoutFreeStake() public {
        bytes32 id = _post(poster, MODEL, INPUT, 200e18, 0, block.timestamp + 1 days);
        _stake(provider2, 150e18);
        vm.expectRevert(
            abi.encodeWithSelector(IStaking.StakingInsufficientFreeStake.selector, provider2, 150e18, 200e18)
        );
        _accept(provider2, id);
    }

    function test_RevertWhen_acceptTaskBelowMinStake() public {
        bytes32 id = _post(poster);
        vm.expectRevert(abi.encodeWithSelector(IStaking.StakingBelowMinimumStake.selector, stranger, 0, 100e18));
        _accept(stranger, id);
    }

    // ------------------------------------------------------------------ cancel

    function test_cancelTask_refundsPoster() public {
        bytes32 id = _post(poster);
        uint256 before = token.balanceOf(poster);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskCancelled(id, PAYMENT + FEE_TIP);
        vm.prank(poster);
        escrow.cancelTask(id);
        assertEq(token.balanceOf(poster), before + PAYMENT + FEE_TIP);
        assertEq(uint8(_status(id)), uint8(ITaskEscrow.TaskStatus.Cancelled));
        assertEq(token.balanceOf(address(escrow)), 0);
    }

    function test_RevertWhen_cancelTaskNotPoster() public {
        bytes32 id = _post(poster);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowNotPoster.selector, id, stranger));
        vm.prank(stranger);
        escrow.cancelTask(id);
    }

    function test_RevertWhen_cancelAcceptedTask() public {
        bytes32 id = _post(poster);
        _accept(provider, id);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, ITaskEscrow.TaskStatus.Accepted)
        );
        vm.prank(poster);
        escrow.cancelTask(id);
    }

    function test_RevertWhen_cancelTwice() public {
        bytes32 id = _post(poster);
        vm.startPrank(poster);
        escrow.cancelTask(id);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, ITaskEscrow.TaskStatus.Cancelled)
        );
        escrow.cancelTask(id);
        vm.stopPrank();
    }

    // ------------------------------------------------------------------ expire

    function test_expireTask_postedRefundsWithoutSlash() public {
        uint256 d = block.timestamp + 1 days;
        bytes32 id = _post(poster, MODEL, INPUT, PAYMENT, FEE_TIP, d);
        vm.warp(d + 1);
        uint256 before = token.balanceOf(poster);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskExpired(id, address(0), PAYMENT + FEE_TIP, 0);
        vm.prank(stranger);
        escrow.expireTask(id);
        assertEq(token.balanceOf(poster), before + PAYMENT + FEE_TIP);
        assertEq(uint8(_status(id)), uint8(ITaskEscrow.TaskStatus.Expired));
    }

    function test_expireTask_acceptedRefundsAndSlashes() public {
        uint256 d = block.timestamp + 1 days;
        bytes32 id = _post(poster, MODEL, INPUT, PAYMENT, FEE_TIP, d);
        _accept(provider, id);
        uint256 collateral = PAYMENT + FEE_TIP;
        uint256 slashed = collateral / 2;
        uint256 toPoster = slashed / 2;
        vm.warp(d + 1);
        uint256 posterBefore = token.balanceOf(poster);
        uint256 treasuryBefore = token.balanceOf(address(timelock));
        vm.expectEmit(address(staking));
        emit IStaking.Slashed(provider, poster, collateral, slashed, toPoster, slashed - toPoster);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TaskExpired(id, provider, PAYMENT + FEE_TIP, toPoster);
        escrow.expireTask(id);
        assertEq(token.balanceOf(poster), posterBefore + PAYMENT + FEE_TIP + toPoster);
        assertEq(token.balanceOf(address(timelock)), treasuryBefore + slashed - toPoster);
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.locked, 0);
        assertEq(a.bonded, STAKE - slashed);
        assertEq(a.tasksSlashed, 1);
    }

    function test_RevertWhen_expireTaskBeforeDeadline() public {
        uint256 d = block.timestamp + 1 days;
        bytes32 id = _post(poster, MODEL, INPUT, PAYMENT, 0, d);
        vm.warp(d);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowDeadlineNotPassed.selector, id, d));
        escrow.expireTask(id);
    }

    function test_RevertWhen_expireCancelledTask() public {
        bytes32 id = _post(poster);
        vm.prank(poster);
        escrow.cancelTask(id);
        skip(2 days);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, ITaskEscrow.TaskStatus.Cancelled)
        );
        escrow.expireTask(id);
    }

    function test_RevertWhen_expireTwice() public {
        bytes32 id = _post(poster);
        skip(2 days);
        escrow.expireTask(id);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, ITaskEscrow.TaskStatus.Expired)
        );
        escrow.expireTask(id);
    }

    function testFuzz_expireTask_timing(uint32 delay, uint32 elapsed) public {
        uint256 d = block.timestamp + bound(delay, 10 minutes, 30 days);
        uint256 e = bound(elapsed, 0, 31 days);
        bytes32 id = _post(poster, MODEL, INPUT, PAYMENT, FEE_TIP, d);
        _accept(provider, id);
        skip(e);
        if (block.timestamp <= d) {
            vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowDeadlineNotPassed.selector, id, d));
            escrow.expireTask(id);
        } else {
            escrow.expireTask(id);
            assertEq(uint8(_status(id)), uint8(ITaskEscrow.TaskStatus.Expired));
            assertEq(staking.account(provider).locked, 0);
        }
    }

    // ------------------------------------------------------------------ settlement entry

    function test_RevertWhen_settleTasksNotSettlement() public {
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowUnauthorizedSettlement.selector, sequencer));
        vm.prank(sequencer);
        escrow.settleTasks(new TaskLeaf[](0));
    }

    /// Settlement fixes each task's split and accrues the batch's fees once; no token moves and
    /// Staking is not touched (collateral stays locked, reputation unchanged until the claim).
    function test_settleTasks_fixesSplitWithoutCallingStaking() public {
        _stake(provider2, STAKE);
        TaskLeaf[] memory leaves = new TaskLeaf[](3);
        leaves[0] = _postAndAccept(provider, 1)[0];
        leaves[1] = _postAndAccept(provider2, 1)[0];
        leaves[2] = _postAndAcceptOne(provider, 333e18 + 7, keccak256("odd reward"));
        uint256 r = PAYMENT + FEE_TIP;
        uint256 odd = 333e18 + 7;
        uint256 fees = r / 100 + r / 100 + odd / 100; // per task floor, 1 %
        uint256 balance = token.balanceOf(address(escrow));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.BatchPaid(3, 2 * r + odd - fees, fees);
        vm.recordLogs();
        _settle(leaves);
        // Only the escrow logs: three TaskSettled and BatchPaid.
        assertEq(vm.getRecordedLogs().length, 4);
        assertEq(escrow.accruedFees(), fees);
        assertEq(token.balanceOf(address(escrow)), balance);
        assertEq(staking.account(provider).locked, r + odd);
        assertEq(staking.account(provider2).locked, r);
        assertEq(staking.account(provider).tasksSettled, 0);
        (bool ok, uint256 pay, uint256 collateral) = escrow.claimable(leaves[2].taskId);
        assertTrue(ok);
        assertEq(pay, odd - odd / 100);
        assertEq(collateral, odd);
        assertEq(uint8(_status(leaves[2].taskId)), uint8(ITaskEscrow.TaskStatus.Settled));
    }

    // ------------------------------------------------------------------ claim

    function test_claimSettled_paysReleasesAndCounts() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 3);
        _settle(leaves);
        uint256 r = PAYMENT + FEE_TIP;
        uint256 pay = r - r / 100;
        bytes32[] memory ids = _ids(leaves);
        uint256 before = token.balanceOf(provider);
        uint256 fees = escrow.accruedFees();

        for (uint256 i = 0; i < 3; ++i) {
            vm.expectEmit(address(escrow));
            emit ITaskEscrow.TaskClaimed(ids[i], provider, pay);
        }
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.SettlementClaimed(provider, 3, 3 * pay, 3 * r);
        vm.expectEmit(address(staking));
        emit IStaking.SettledCollateralReleased(provider, 3 * r, 3);
        vm.prank(provider);
        (uint256 paid, uint256 released) = escrow.claimSettled(ids);

        assertEq(paid, 3 * pay);
        assertEq(released, 3 * r);
        assertEq(token.balanceOf(provider), before + 3 * pay);
        IStaking.ProviderAccount memory a = staking.account(provider);
        assertEq(a.locked, 0);
        assertEq(a.bonded, STAKE);
        assertEq(a.tasksSettled, 3);
        // Only the fees remain in the escrow; the tasks stay Settled, no longer claimable.
        assertEq(token.balanceOf(address(escrow)), fees);
        for (uint256 i = 0; i < 3; ++i) {
            assertEq(uint8(_status(ids[i])), uint8(ITaskEscrow.TaskStatus.Settled));
            (bool ok, uint256 p, uint256 c) = escrow.claimable(ids[i]);
            assertFalse(ok);
            assertEq(p, 0);
            assertEq(c, 0);
        }
    }

    /// Claims need not follow batches: any subset, in any order, across batches.
    function test_claimSettled_subsetsAcrossBatches() public {
        TaskLeaf[] memory a = _postAndAccept(provider, 2);
        _settle(a);
        TaskLeaf[] memory b = _postAndAccept(provider, 2);
        _settle(b);
        bytes32[] memory ids = new bytes32[](2);
        (ids[0], ids[1]) = (b[1].taskId, a[0].taskId);
        vm.prank(provider);
        escrow.claimSettled(ids);
        (bool ok,,) = escrow.claimable(a[1].taskId);
        assertTrue(ok);
        (ok,,) = escrow.claimable(b[0].taskId);
        assertTrue(ok);
        assertEq(staking.account(provider).tasksSettled, 2);
        assertEq(staking.account(provider).locked, 2 * (PAYMENT + FEE_TIP));
    }

    function test_RevertWhen_claimTwice() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        _settle(leaves);
        bytes32[] memory ids = _ids(leaves);
        vm.prank(provider);
        escrow.claimSettled(ids);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskAlreadyClaimed.selector, ids[0]));
        vm.prank(provider);
        escrow.claimSettled(ids);
    }

    function test_RevertWhen_claimRepeatsIdInOneCall() public {
        TaskLeaf[] memory leaves = _postAndAccept(provider, 2);
        _settle(leaves);
        bytes32[] memory ids = new bytes32[](3);
        (ids[0], ids[1], ids[2]) = (leaves[0].taskId, leaves[1].taskId, leaves[0].taskId);
        uint256 before = token.balanceOf(provider);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskAlreadyClaimed.selector, ids[0]));
        vm.prank(provider);
        escrow.claimSettled(ids);
        // Nothing happened: both still claimable, nothing paid.
        assertEq(token.balanceOf(provider), before);
        (bool ok,,) = escrow.claimable(ids[0]);
        assertTrue(ok);
        assertEq(staking.account(provider).tasksSettled, 0);
    }

    function test_RevertWhen_claimAnotherProvidersTask() public {
        _stake(provider2, STAKE);
        TaskLeaf[] memory leaves = _postAndAccept(provider, 1);
        _settle(leaves);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowNotProvider.selector, leaves[0].taskId, provider2));
        vm.prank(provider2);
        escrow.claimSettled(_ids(leaves));
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowNotProvider.selector, leaves[0].taskId, poster));
        vm.prank(poster);
        escrow.claimSettled(_ids(leaves));
    }

    /// One bad id reverts the whole claim, naming it.
    function test_RevertWhen_claimMixesOwnAndForeignTasks() public {
        _stake(provider2, STAKE);
        TaskLeaf[] memory leaves = new TaskLeaf[](2);
        leaves[0] = _postAndAccept(provider, 1)[0];
        leaves[1] = _postAndAccept(provider2, 1)[0];
        _settle(leaves);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowNotProvider.selector, leaves[1].taskId, provider));
        vm.prank(provider);
        escrow.claimSettled(_ids(leaves));
        (bool ok,,) = escrow.claimable(leaves[0].taskId);
        assertTrue(ok);
    }

    function test_RevertWhen_claimUnsettledTask() public {
        bytes32 posted = _post(poster);
        bytes32 accepted = _post(poster);
        _accept(provider, accepted);
        vm.startPrank(provider);
        vm.expectRevert(
            abi.encodeWithSelector(
                ITaskEscrow.TaskEscrowTaskNotSettled.selector, accepted, ITaskEscrow.TaskStatus.Accepted
            )
        );
        escrow.claimSettled(_one(accepted));
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskNotSettled.selector, posted, ITaskEscrow.TaskStatus.Posted)
        );
        escrow.claimSettled(_one(posted));
        vm.stopPrank();
    }

    function test_RevertWhen_claimExpiredTask() public {
        bytes32 id = _post(poster);
        _accept(provider, id);
        skip(2 days);
        escrow.expireTask(id);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskNotSettled.selector, id, ITaskEscrow.TaskStatus.Expired)
        );
        vm.prank(provider);
        escrow.claimSettled(_one(id));
    }

    function test_RevertWhen_claimCancelledTask() public {
        bytes32 id = _post(poster);
        vm.prank(poster);
        escrow.cancelTask(id);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskNotSettled.selector, id, ITaskEscrow.TaskStatus.Cancelled)
        );
        vm.prank(provider);
        escrow.claimSettled(_one(id));
    }

    function test_RevertWhen_claimUnknownTask() public {
        bytes32 id = keccak256("no such task");
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowTaskNotSettled.selector, id, ITaskEscrow.TaskStatus.None)
        );
        vm.prank(provider);
        escrow.claimSettled(_one(id));
        (bool ok, uint256 pay, uint256 collateral) = escrow.claimable(id);
        assertFalse(ok);
        assertEq(pay + collateral, 0);
    }

    function test_RevertWhen_claimEmptyList() public {
        vm.expectRevert(ITaskEscrow.TaskEscrowEmptyClaim.selector);
        vm.prank(provider);
        escrow.claimSettled(new bytes32[](0));
    }

    /// The fee in force at settlement fixes the pay: a governance change before the claim does not
    /// alter it, and applies to tasks settled afterwards.
    function test_claimSettled_feeChangedBetweenSettleAndClaimPaysOldFee() public {
        TaskLeaf[] memory early = _postAndAccept(provider, 1);
        _settle(early); // 1 %
        vm.prank(address(timelock));
        escrow.setProtocolFee(2_000); // 20 %
        TaskLeaf[] memory late = _one(_postAndAcceptOne(provider, PAYMENT, keccak256("late")));
        _settle(late);
        uint256 r = PAYMENT + FEE_TIP;
        assertEq(escrow.accruedFees(), r / 100 + PAYMENT / 5);
        vm.prank(address(timelock));
        escrow.setProtocolFee(0); // changing it again changes nothing either
        (, uint256 earlyPay,) = escrow.claimable(early[0].taskId);
        (, uint256 latePay,) = escrow.claimable(late[0].taskId);
        assertEq(earlyPay, r - r / 100);
        assertEq(latePay, PAYMENT - PAYMENT / 5);
        uint256 before = token.balanceOf(provider);
        bytes32[] memory ids = new bytes32[](2);
        (ids[0], ids[1]) = (early[0].taskId, late[0].taskId);
        vm.prank(provider);
        (uint256 paid,) = escrow.claimSettled(ids);
        assertEq(paid, earlyPay + latePay);
        assertEq(token.balanceOf(provider), before + paid);
        escrow.sweepFees();
        assertEq(token.balanceOf(address(escrow)), 0);
    }

    /// A settled task's collateral stays locked until the claim: it cannot be unbonded, and since
    /// the task is Settled it cannot be slashed either, even after the deadline.
    function test_settledUnclaimedCollateralStaysLockedButUnslashable() public {
        bytes32 id = _post(poster, MODEL, INPUT, 5_000e18, 0, block.timestamp + 1 days);
        _accept(provider, id);
        TaskLeaf[] memory leaves = _one(
            TaskLeaf({taskId: id, modelId: MODEL, inputCommitment: INPUT, outputCommitment: OUTPUT, provider: provider})
        );
        _settle(leaves);
        vm.expectRevert(
            abi.encodeWithSelector(IStaking.StakingInsufficientFreeStake.selector, provider, 5_000e18, 5_000e18 + 1)
        );
        vm.prank(provider);
        staking.requestUnbonding(5_000e18 + 1);
        skip(2 days);
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidStatus.selector, id, ITaskEscrow.TaskStatus.Settled)
        );
        escrow.expireTask(id);
        assertEq(staking.account(provider).bonded, STAKE);
        vm.prank(provider);
        escrow.claimSettled(_one(id)); // no claim deadline
        assertEq(staking.freeStake(provider), STAKE);
        vm.prank(provider);
        staking.requestUnbonding(STAKE);
    }

    /// fee + pay == reward for every task, the batch accrues exactly the tasks' fees, and after the
    /// claim and the sweep the escrow holds nothing.
    function testFuzz_settleAndClaim_conservesExactly(uint96[3] memory rewards, uint16 feeBps, uint16 laterBps) public {
        feeBps = uint16(bound(feeBps, 0, 2_000));
        laterBps = uint16(bound(laterBps, 0, 2_000));
        vm.prank(address(timelock));
        escrow.setProtocolFee(feeBps);
        _stake(provider, 900_000e18);
        TaskLeaf[] memory leaves = new TaskLeaf[](3);
        uint256 fees;
        uint256 sum;
        for (uint256 i = 0; i < 3; ++i) {
            uint256 r = bound(rewards[i], 1, 100_000e18);
            leaves[i] = _postAndAcceptOne(provider, r, keccak256(abi.encode("fuzz", i)));
            fees += r * feeBps / 10_000;
            sum += r;
        }
        _settle(leaves);
        assertEq(escrow.accruedFees(), fees);
        vm.prank(address(timelock));
        escrow.setProtocolFee(laterBps);
        uint256 pays;
        for (uint256 i = 0; i < 3; ++i) {
            (, uint256 pay,) = escrow.claimable(leaves[i].taskId);
            uint256 r = escrow.task(leaves[i].taskId).reward;
            assertEq(pay + r * feeBps / 10_000, r);
            pays += pay;
        }
        assertEq(pays + fees, sum);
        uint256 before = token.balanceOf(provider);
        vm.prank(provider);
        (uint256 paid,) = escrow.claimSettled(_ids(leaves));
        assertEq(paid, pays);
        assertEq(token.balanceOf(provider), before + pays);
        escrow.sweepFees();
        assertEq(token.balanceOf(address(escrow)), 0);
        assertEq(staking.account(provider).locked, 0);
    }

    function test_sweepFees_nothingAccrued() public {
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.FeesSwept(address(timelock), 0);
        assertEq(escrow.sweepFees(), 0);
    }

    // ------------------------------------------------------------------ governance

    function test_setters_ownerOnlyAndEmit() public {
        vm.startPrank(address(timelock));
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.CollateralParametersUpdated(5_000, 1e18);
        escrow.setCollateralParameters(5_000, 1e18);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.ProtocolFeeUpdated(250);
        escrow.setProtocolFee(250);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.DeadlineBoundsUpdated(1 minutes, 2 days);
        escrow.setDeadlineBounds(1 minutes, 2 days);
        vm.expectEmit(address(escrow));
        emit ITaskEscrow.TreasuryUpdated(stranger);
        escrow.setTreasury(stranger);
        vm.stopPrank();
        assertEq(escrow.collateralBps(), 5_000);
        assertEq(escrow.minCollateral(), 1e18);
        assertEq(escrow.protocolFeeBps(), 250);
        (uint256 lo, uint256 hi) = escrow.deadlineBounds();
        assertEq(lo, 1 minutes);
        assertEq(hi, 2 days);
        assertEq(escrow.treasury(), stranger);
        assertEq(escrow.token(), address(token));
        assertEq(escrow.staking(), address(staking));
        assertEq(escrow.registry(), address(registry));
        assertEq(escrow.settlement(), address(settlement));
        assertEq(escrow.owner(), address(timelock));
    }

    function test_RevertWhen_setterCalledByNonOwner() public {
        vm.startPrank(stranger);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        escrow.setCollateralParameters(1, 1);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        escrow.setProtocolFee(1);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        escrow.setDeadlineBounds(1, 2);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        escrow.setTreasury(stranger);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        escrow.bindSettlement(stranger);
        vm.stopPrank();
    }

    function test_RevertWhen_invalidParameters() public {
        vm.startPrank(address(timelock));
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidBps.selector, 100_001, 100_000));
        escrow.setCollateralParameters(100_001, 0);
        uint256 big = uint256(type(uint96).max) + 1;
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowMinCollateralTooLarge.selector, big));
        escrow.setCollateralParameters(0, big);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidBps.selector, 2_001, 2_000));
        escrow.setProtocolFee(2_001);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadlineBounds.selector, 0, 1 days));
        escrow.setDeadlineBounds(0, 1 days);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadlineBounds.selector, 2 days, 1 days));
        escrow.setDeadlineBounds(2 days, 1 days);
        vm.expectRevert(abi.encodeWithSelector(ITaskEscrow.TaskEscrowInvalidDeadlineBounds.selector, 1, 366 days));
        escrow.setDeadlineBounds(1, 366 days);
        vm.expectRevert(ITaskEscrow.TaskEscrowZeroAddress.selector);
        escrow.setTreasury(address(0));
        vm.expectRevert(
            abi.encodeWithSelector(ITaskEscrow.TaskEscrowSettlementAlreadyBound.selector, address(settlement))
        );
        escrow.bindSettlement(stranger);
        vm.stopPrank();
    }

    function test_RevertWhen_constructedWithZeroAddresses() public {
        vm.expectRevert(ITaskEscrow.TaskEscrowZeroAddress.selector);
        new TaskEscrow(
            address(this), IERC20(address(0)), staking, IModelRegistry(address(registry)), address(this), 0, 0, 0, 1, 1
        );
        TaskEscrow fresh = new TaskEscrow(
            address(this),
            IERC20(address(token)),
            staking,
            IModelRegistry(address(registry)),
            address(this),
            0,
            0,
            0,
            1,
            1
        );
        vm.expectRevert(ITaskEscrow.TaskEscrowZeroAddress.selector);
        fresh.bindSettlement(address(0));
    }

    // ------------------------------------------------------------------ helpers

    /// @dev Settles `leaves` as the bound Settlement would after verifying their proof.
    function _settle(TaskLeaf[] memory leaves) internal {
        vm.prank(address(settlement));
        escrow.settleTasks(leaves);
    }

    function _ids(TaskLeaf[] memory leaves) internal pure returns (bytes32[] memory ids) {
        ids = new bytes32[](leaves.length);
        for (uint256 i = 0; i < leaves.length; ++i) {
            ids[i] = leaves[i].taskId;
        }
    }

    function _one(bytes32 id) internal pure returns (bytes32[] memory ids) {
        ids = new bytes32[](1);
        ids[0] = id;
    }

    /// @dev Posts one task of `reward` (no tip) with input `input` and has `prov` accept it.
    function _postAndAcceptOne(address prov, uint256 reward, bytes32 input) internal returns (TaskLeaf memory) {
        bytes32 id = _post(poster, MODEL, input, reward, 0, block.timestamp + 1 days);
        _accept(prov, id);
        return TaskLeaf({taskId: id, modelId: MODEL, inputCommitment: input, outputCommitment: OUTPUT, provider: prov});
    }

    function _signPermit(uint256 key, address owner, uint256 value, uint256 deadline)
        internal
        view
        returns (uint8, bytes32, bytes32)
    {
        bytes32 structHash =
            keccak256(abi.encode(_PERMIT_TYPEHASH, owner, address(escrow), value, token.nonces(owner), deadline));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", token.DOMAIN_SEPARATOR(), structHash));
        return vm.sign(key, digest);
    }
}
