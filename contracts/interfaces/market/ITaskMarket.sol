// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Order} from "../../libraries/OrderLib.sol";
import {IBonds} from "./IBonds.sol";
import {IDeposits} from "./IDeposits.sol";
import {IDisputes} from "./IDisputes.sol";
import {ISettleBatch} from "./ISettleBatch.sol";

/// @title ITaskMarket
/// @notice The task market (version 2): orders and acceptances are EIP-712 signatures that travel
/// off-chain; the chain holds posters' deposit books, providers' bonds and earnings, settles proven
/// batches permissionlessly and hears disputes. Parameters are owned by the governance timelock,
/// within bounds set here.
interface ITaskMarket is IDeposits, IBonds, ISettleBatch, IDisputes {
    /// @notice Earnings and reputation of an account.
    /// @param earnings Pay and settler fees credited and not yet withdrawn.
    /// @param tasksSettled Orders it was paid for.
    /// @param tasksSlashed Orders it was slashed for.
    struct Earner {
        uint96 earnings;
        uint32 tasksSettled;
        uint32 tasksSlashed;
    }

    /// @notice The governed parameters.
    /// @param verifier Groth16 verifier of batch proofs.
    /// @param maxBatchSize Most leaves in one batch.
    /// @param protocolFeeBps Fraction of each paid order's payment taken as fee, in basis points.
    /// @param settlerShareBps Fraction of the fee credited to the batch's settler, in basis points.
    /// @param selfSettlementWindow Seconds before an order's deadline from which anyone may settle it
    /// (before that, only sequencers).
    /// @param maxDeadlineDelay The longest deadline, in seconds after signing, that tools accept and
    /// the delays below are sized for.
    /// @param disputeWindow Seconds after a deadline during which the order may be disputed (the
    /// window closes at deadline + disputeWindow, exclusive).
    /// @param depositUnlockDelay Seconds from closing a book to withdrawing it (> maxDeadlineDelay).
    /// @param unbondingDelay Seconds from requesting unbonding to withdrawing (>= maxDeadlineDelay +
    /// disputeWindow).
    /// @param minPayment Orders paying less cannot be disputed.
    /// @param treasury Receives protocol fees and the treasury share of slashes.
    struct Parameters {
        address verifier;
        uint256 maxBatchSize;
        uint256 protocolFeeBps;
        uint256 settlerShareBps;
        uint256 selfSettlementWindow;
        uint256 maxDeadlineDelay;
        uint256 disputeWindow;
        uint256 depositUnlockDelay;
        uint256 unbondingDelay;
        uint256 minPayment;
        address treasury;
    }

    /// @notice `account` withdrew `amount` of earnings.
    /// @param account The account.
    /// @param amount Tokens sent.
    event EarningsWithdrawn(address indexed account, uint256 amount);

    /// @notice Accrued treasury income was sent to the treasury.
    /// @param treasury The treasury.
    /// @param amount Tokens sent.
    event FeesSwept(address indexed treasury, uint256 amount);

    /// @notice `account` gained or lost the sequencer role (priority before self-settlement windows).
    /// @param account The account.
    /// @param allowed Whether it has the role now.
    event SequencerUpdated(address indexed account, bool allowed);

    /// @notice The batch verifier changed.
    /// @param verifier The new verifier.
    event VerifierUpdated(address indexed verifier);

    /// @notice The maximum batch size changed.
    /// @param maxBatchSize The new maximum.
    event MaxBatchSizeUpdated(uint256 maxBatchSize);

    /// @notice The fees changed.
    /// @param protocolFeeBps Fee on each paid order, in basis points.
    /// @param settlerShareBps Settler's share of the fee, in basis points.
    event FeesUpdated(uint256 protocolFeeBps, uint256 settlerShareBps);

    /// @notice The self-settlement window changed.
    /// @param window Seconds before a deadline from which anyone may settle.
    event SelfSettlementWindowUpdated(uint256 window);

    /// @notice The delays changed.
    /// @param maxDeadlineDelay The longest deadline.
    /// @param disputeWindow The dispute window.
    /// @param depositUnlockDelay The deposit unlock delay.
    /// @param unbondingDelay The unbonding delay.
    event DelaysUpdated(
        uint256 maxDeadlineDelay, uint256 disputeWindow, uint256 depositUnlockDelay, uint256 unbondingDelay
    );

    /// @notice The minimum payment for disputes changed.
    /// @param minPayment The new minimum.
    event MinPaymentUpdated(uint256 minPayment);

    /// @notice The treasury changed.
    /// @param treasury The new treasury.
    event TreasuryUpdated(address indexed treasury);

    /// @notice The zero address was given where an account or contract is required.
    error MarketZeroAddress();

    /// @notice `verifier` has no code.
    /// @param verifier The address given.
    error MarketNotAContract(address verifier);

    /// @notice A new verifier rejected the known-good proof it was installed with.
    /// @param verifier The verifier.
    error MarketVerifierRejectsGoodProof(address verifier);

    /// @notice A new verifier accepted its known-good proof for another public input: it does not
    /// check what it is given (an accept-everything verifier would make every batch forgeable).
    /// @param verifier The verifier.
    error MarketVerifierAcceptsWrongInput(address verifier);

    /// @notice A basis-point parameter `bps` is above its maximum `maxBps`.
    /// @param bps The value.
    /// @param maxBps The maximum.
    error MarketInvalidBps(uint256 bps, uint256 maxBps);

    /// @notice The maximum batch size must be 1 .. 4096.
    /// @param maxBatchSize The value given.
    error MarketInvalidMaxBatchSize(uint256 maxBatchSize);

    /// @notice The self-settlement window must lie in [5 minutes, 7 days].
    /// @param window The value given.
    error MarketInvalidSelfSettlementWindow(uint256 window);

    /// @notice The delays must satisfy 1 hour <= maxDeadlineDelay <= 365 days, 1 hour <=
    /// disputeWindow <= 30 days, maxDeadlineDelay < depositUnlockDelay <= 730 days and
    /// maxDeadlineDelay + disputeWindow <= unbondingDelay <= 730 days (and, separately,
    /// unbondingDelay and depositUnlockDelay <= the owner timelock's delay:
    /// {MarketTimelockFasterThanUnbonding}, {MarketTimelockFasterThanDepositUnlock}).
    /// @param maxDeadlineDelay The value given.
    /// @param disputeWindow The value given.
    /// @param depositUnlockDelay The value given.
    /// @param unbondingDelay The value given.
    error MarketInvalidDelays(
        uint256 maxDeadlineDelay, uint256 disputeWindow, uint256 depositUnlockDelay, uint256 unbondingDelay
    );

    /// @notice The market's owner is a timelock whose delay is shorter than the unbonding delay:
    /// a passed proposal could land before a bonded provider who objects to it can leave, so the
    /// owner may not act (nor set such an unbonding delay, nor hand the market to such a timelock).
    /// @param timelockDelay The owner's `getMinDelay()`.
    /// @param unbondingDelay The unbonding delay it must reach.
    error MarketTimelockFasterThanUnbonding(uint256 timelockDelay, uint256 unbondingDelay);

    /// @notice The market's owner is a timelock whose delay is shorter than the deposit unlock
    /// delay: a passed proposal (a new verifier, fees) could land before a poster who objects to
    /// it can close its book and withdraw, so the owner may not act (nor set such an unlock delay,
    /// nor hand the market to such a timelock).
    /// @param timelockDelay The owner's `getMinDelay()`.
    /// @param depositUnlockDelay The deposit unlock delay it must reach.
    error MarketTimelockFasterThanDepositUnlock(uint256 timelockDelay, uint256 depositUnlockDelay);

    /// @notice Sends the caller its earnings (provider pay and settler fees).
    /// @dev Emits {EarningsWithdrawn}.
    /// @return amount Tokens sent.
    function withdrawEarnings() external returns (uint256 amount);

    /// @notice Sends accrued treasury income (protocol fees less settler shares, treasury shares of
    /// slashes) to the treasury. Anyone may call.
    /// @dev Emits {FeesSwept}.
    /// @return amount Tokens sent.
    function sweepFees() external returns (uint256 amount);

    /// @notice Grants or revokes the sequencer role. Owner only.
    /// @dev Emits {SequencerUpdated}.
    /// @param account The account.
    /// @param allowed Whether it has the role.
    function setSequencer(address account, bool allowed) external;

    /// @notice Sets the batch verifier. Owner only. The new verifier must, at the time of the
    /// change, accept `proof` for `publicInput` (a real batch proof under its key) and reject the
    /// same proof for another public input: a contract that accepts everything, or nothing, is
    /// refused, whatever the vote.
    /// @dev Emits {VerifierUpdated}.
    /// @param verifier The verifier.
    /// @param proof A valid proof under the new verifier's key (docs/encodings.md layout).
    /// @param publicInput Its public input.
    function setVerifier(address verifier, uint256[8] calldata proof, uint256 publicInput) external;

    /// @notice Sets the maximum batch size (1 .. 4096). Owner only.
    /// @dev Emits {MaxBatchSizeUpdated}.
    /// @param maxBatchSize The maximum.
    function setMaxBatchSize(uint256 maxBatchSize) external;

    /// @notice Sets the fees (protocol fee <= 2,000 bps, settler share <= 10,000 bps). Owner only.
    /// @dev Emits {FeesUpdated}.
    /// @param protocolFeeBps Fee on each paid order.
    /// @param settlerShareBps Settler's share of the fee.
    function setFees(uint256 protocolFeeBps, uint256 settlerShareBps) external;

    /// @notice Sets the self-settlement window (5 minutes .. 7 days). Owner only.
    /// @dev Emits {SelfSettlementWindowUpdated}.
    /// @param window Seconds before a deadline from which anyone may settle.
    function setSelfSettlementWindow(uint256 window) external;

    /// @notice Sets the four delays together, so their ordering always holds (see
    /// {MarketInvalidDelays}). Owner only. A change applies to books closed and unbondings
    /// requested afterwards.
    /// @dev Emits {DelaysUpdated}.
    /// @param maxDeadlineDelay The longest deadline.
    /// @param disputeWindow The dispute window.
    /// @param depositUnlockDelay The deposit unlock delay.
    /// @param unbondingDelay The unbonding delay.
    function setDelays(
        uint256 maxDeadlineDelay,
        uint256 disputeWindow,
        uint256 depositUnlockDelay,
        uint256 unbondingDelay
    ) external;

    /// @notice Sets the minimum payment of a disputable order. Owner only.
    /// @dev Emits {MinPaymentUpdated}.
    /// @param minPayment The minimum (fits 96 bits).
    function setMinPayment(uint256 minPayment) external;

    /// @notice Sets the treasury. Owner only.
    /// @dev Emits {TreasuryUpdated}.
    /// @param treasury The treasury.
    function setTreasury(address treasury) external;

    /// @notice The EIP-712 digest of `order`: its task id.
    /// @param order The order.
    function hashOrder(Order calldata order) external view returns (bytes32);

    /// @notice The EIP-712 digest a provider signs to accept the order whose digest is `orderHash`.
    /// @param orderHash The order's digest.
    function hashAcceptance(bytes32 orderHash) external view returns (bytes32);

    /// @notice Earnings and reputation of `account`.
    /// @param account The account.
    function earner(address account) external view returns (Earner memory);

    /// @notice Whether `account` has the sequencer role.
    /// @param account The account.
    function isSequencer(address account) external view returns (bool);

    /// @notice The governed parameters.
    function parameters() external view returns (Parameters memory);

    /// @notice Treasury income accrued and not yet swept.
    function accruedFees() external view returns (uint256);

    /// @notice The payment token (TGRID).
    function token() external view returns (address);

    /// @notice The ModelRegistry.
    function registry() external view returns (address);
}
