// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ITaskMarket} from "../interfaces/market/ITaskMarket.sol";

/// @title MarketBase
/// @notice Storage, parameters and shared helpers of the TaskMarket; each job (deposits, bonds,
/// settlement, disputes) lives in its own abstract contract on top of this one.
/// @dev Solvency: the TGRID balance of the market equals the sum over books of `remaining`, plus
/// bonded and unbonding stake, plus earnings not withdrawn, plus accrued treasury income
/// (checked by the invariant tests). Packed storage words (read in assembly by the settlement):
/// `Book` = remaining (bits 0-95) | perOrderMax (96-191) | capacity (192-215) | unlockAt (216-255);
/// `Earner` = earnings (0-95) | tasksSettled (96-127) | tasksSlashed (128-159).
abstract contract MarketBase is ITaskMarket, Ownable, EIP712 {
    using SafeERC20 for IERC20;

    uint256 internal constant _BPS = 10_000;
    uint256 internal constant _U24 = (1 << 24) - 1;
    uint256 internal constant _U32 = (1 << 32) - 1;
    uint256 internal constant _U40 = (1 << 40) - 1;
    uint256 internal constant _U96 = (1 << 96) - 1;

    /// @notice Upper bound of the protocol fee, in basis points.
    uint256 public constant MAX_PROTOCOL_FEE_BPS = 2_000;
    /// @notice Upper bound of the maximum batch size.
    uint256 public constant MAX_BATCH_SIZE_LIMIT = 4096;
    /// @notice Bounds of the self-settlement window.
    uint256 public constant MIN_SELF_SETTLEMENT_WINDOW = 5 minutes;
    uint256 public constant MAX_SELF_SETTLEMENT_WINDOW = 7 days;

    IERC20 internal immutable _token;
    IModelRegistry internal immutable _registry;

    // Read once per settled batch: one slot.
    IGroth16Verifier internal _verifier;
    uint32 internal _maxBatchSize;
    uint16 internal _protocolFeeBps;
    uint16 internal _settlerShareBps;
    uint32 internal _selfSettlementWindow;

    // Delays and the dispute floor: one slot.
    uint32 internal _maxDeadlineDelay;
    uint32 internal _disputeWindow;
    uint32 internal _depositUnlockDelay;
    uint32 internal _unbondingDelay;
    uint96 internal _minPayment;

    address internal _treasury;
    uint96 internal _accruedFees;

    mapping(address account => bool) internal _sequencers;
    mapping(address poster => mapping(uint32 book => Book)) internal _books;
    mapping(address poster => uint32) internal _bookCounts;
    mapping(address poster => mapping(uint256 word => uint256 bits)) internal _nonceWords;
    mapping(address provider => Bond) internal _bonds;
    mapping(address account => Earner) internal _earners;

    /// @param owner_ Owner of the parameters (the timelock, or the deployer who hands over).
    /// @param token_ The payment and bond token (TGRID).
    /// @param registry_ The ModelRegistry.
    /// @param params Initial parameters (all checked as their setters check them).
    constructor(address owner_, IERC20 token_, IModelRegistry registry_, Parameters memory params)
        Ownable(owner_)
        EIP712("TensorGrid TaskMarket", "2")
    {
        if (address(token_) == address(0) || address(registry_) == address(0)) {
            revert MarketZeroAddress();
        }
        _token = token_;
        _registry = registry_;
        _setVerifier(params.verifier);
        _setMaxBatchSize(params.maxBatchSize);
        _setFees(params.protocolFeeBps, params.settlerShareBps);
        _setSelfSettlementWindow(params.selfSettlementWindow);
        _setDelays(params.maxDeadlineDelay, params.disputeWindow, params.depositUnlockDelay, params.unbondingDelay);
        _setMinPayment(params.minPayment);
        _setTreasury(params.treasury);
    }

    // ------------------------------------------------------------------ governance delay

    /// @dev Every owner-only call first checks that the owner, if it is a timelock, waits at least
    /// the unbonding delay and the deposit unlock delay: a vote that shortened the timelock's
    /// delay cannot then change the market (its verifier included) faster than a bonded provider
    /// or a poster's deposit can leave.
    function _checkOwner() internal view override {
        super._checkOwner();
        _checkGovernanceDelay(owner(), _unbondingDelay, _depositUnlockDelay);
    }

    /// @dev Handing the market to a faster timelock is refused too.
    function _transferOwnership(address newOwner) internal override {
        _checkGovernanceDelay(newOwner, _unbondingDelay, _depositUnlockDelay);
        super._transferOwnership(newOwner);
    }

    /// @dev Reverts if `governor` is a contract answering `getMinDelay()` (OpenZeppelin's
    /// TimelockController) with less than `unbonding` or `depositUnlock`. An account without code
    /// (a deployer before the hand-over, a devnet) and a contract without that function have no
    /// delay to check.
    function _checkGovernanceDelay(address governor, uint256 unbonding, uint256 depositUnlock) internal view {
        if (governor.code.length == 0) return;
        (bool ok, bytes memory data) = governor.staticcall(abi.encodeWithSignature("getMinDelay()"));
        if (!ok || data.length != 32) return;
        uint256 delay = abi.decode(data, (uint256));
        if (delay < unbonding) revert MarketTimelockFasterThanUnbonding(delay, unbonding);
        if (delay < depositUnlock) revert MarketTimelockFasterThanDepositUnlock(delay, depositUnlock);
    }

    // ------------------------------------------------------------------ nonces

    /// @dev Marks `poster`'s nonce used; returns whether it already was.
    function _useNonce(address poster, uint64 nonce) internal returns (bool wasUsed) {
        uint256 bit = 1 << (nonce & 0xff);
        mapping(uint256 => uint256) storage words = _nonceWords[poster];
        uint256 bits = words[nonce >> 8];
        wasUsed = bits & bit != 0;
        if (!wasUsed) words[nonce >> 8] = bits | bit;
    }

    function _nonceUsed(address poster, uint64 nonce) internal view returns (bool) {
        return _nonceWords[poster][nonce >> 8] & (1 << (nonce & 0xff)) != 0;
    }

    // ------------------------------------------------------------------ tokens

    function _pull(address from, uint256 amount) internal {
        _token.safeTransferFrom(from, address(this), amount);
    }

    function _send(address to, uint256 amount) internal {
        if (amount != 0) _token.safeTransfer(to, amount);
    }

    function _toUint96(uint256 amount) internal pure returns (uint96) {
        if (amount > _U96) revert MarketAmountTooLarge(amount);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked on the line above
        return uint96(amount);
    }

    // ------------------------------------------------------------------ verification

    /// @dev A verifier that reverts counts as a rejection.
    function _accepts(IGroth16Verifier verifier_, uint256[8] calldata proof, uint256 publicInput)
        internal
        view
        returns (bool)
    {
        try verifier_.verifyProof(proof, publicInput) returns (bool ok) {
            return ok;
        } catch {
            return false;
        }
    }

    // ------------------------------------------------------------------ parameter setters

    function _setVerifier(address verifier_) internal {
        if (verifier_.code.length == 0) revert MarketNotAContract(verifier_);
        _verifier = IGroth16Verifier(verifier_);
        emit VerifierUpdated(verifier_);
    }

    function _setMaxBatchSize(uint256 maxBatchSize_) internal {
        if (maxBatchSize_ == 0 || maxBatchSize_ > MAX_BATCH_SIZE_LIMIT) {
            revert MarketInvalidMaxBatchSize(maxBatchSize_);
        }
        // forge-lint: disable-next-line(unsafe-typecast) -- <= MAX_BATCH_SIZE_LIMIT, checked above
        _maxBatchSize = uint32(maxBatchSize_);
        emit MaxBatchSizeUpdated(maxBatchSize_);
    }

    function _setFees(uint256 protocolFeeBps_, uint256 settlerShareBps_) internal {
        if (protocolFeeBps_ > MAX_PROTOCOL_FEE_BPS) revert MarketInvalidBps(protocolFeeBps_, MAX_PROTOCOL_FEE_BPS);
        if (settlerShareBps_ > _BPS) revert MarketInvalidBps(settlerShareBps_, _BPS);
        // forge-lint: disable-next-line(unsafe-typecast) -- both <= 10,000, checked above
        _protocolFeeBps = uint16(protocolFeeBps_);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked above
        _settlerShareBps = uint16(settlerShareBps_);
        emit FeesUpdated(protocolFeeBps_, settlerShareBps_);
    }

    function _setSelfSettlementWindow(uint256 window) internal {
        if (window < MIN_SELF_SETTLEMENT_WINDOW || window > MAX_SELF_SETTLEMENT_WINDOW) {
            revert MarketInvalidSelfSettlementWindow(window);
        }
        // forge-lint: disable-next-line(unsafe-typecast) -- <= 7 days, checked above
        _selfSettlementWindow = uint32(window);
        emit SelfSettlementWindowUpdated(window);
    }

    /// @dev Deposits must stay longer than any order they back can settle; bonds longer than any
    /// order can be disputed.
    function _setDelays(uint256 maxDeadline, uint256 disputeWindow_, uint256 depositUnlock, uint256 unbonding)
        internal
    {
        bool ok = maxDeadline >= 1 hours && maxDeadline <= 365 days && disputeWindow_ >= 1 hours
            && disputeWindow_ <= 30 days && depositUnlock > maxDeadline && depositUnlock <= 730 days
            && unbonding >= maxDeadline + disputeWindow_ && unbonding <= 730 days;
        if (!ok) revert MarketInvalidDelays(maxDeadline, disputeWindow_, depositUnlock, unbonding);
        _checkGovernanceDelay(owner(), unbonding, depositUnlock);
        // forge-lint: disable-next-line(unsafe-typecast) -- each <= 730 days, checked above
        _maxDeadlineDelay = uint32(maxDeadline);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked above
        _disputeWindow = uint32(disputeWindow_);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked above
        _depositUnlockDelay = uint32(depositUnlock);
        // forge-lint: disable-next-line(unsafe-typecast) -- checked above
        _unbondingDelay = uint32(unbonding);
        emit DelaysUpdated(maxDeadline, disputeWindow_, depositUnlock, unbonding);
    }

    function _setMinPayment(uint256 minPayment_) internal {
        _minPayment = _toUint96(minPayment_);
        emit MinPaymentUpdated(minPayment_);
    }

    function _setTreasury(address treasury_) internal {
        if (treasury_ == address(0)) revert MarketZeroAddress();
        _treasury = treasury_;
        emit TreasuryUpdated(treasury_);
    }
}
