// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";

import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {Order, OrderLib} from "../libraries/OrderLib.sol";
import {BatchSettlement} from "./BatchSettlement.sol";
import {Deposits} from "./Deposits.sol";
import {Disputes} from "./Disputes.sol";
import {MarketBase} from "./MarketBase.sol";
import {ITaskMarket} from "../interfaces/market/ITaskMarket.sol";

/// @title TaskMarket
/// @notice The task market, version 2 (see {ITaskMarket}): deposit books, provider bonds,
/// permissionless batch settlement of signed orders, disputes, earnings and governed parameters.
/// @dev Each job is its own abstract contract ({Deposits}, {Bonds} via {Disputes},
/// {BatchSettlement}, {Disputes}) over {MarketBase}'s storage. The owner is the governance
/// timelock. The only external calls are the TGRID token (no transfer hooks), the ModelRegistry
/// (views) and the verifier (a view, hence a STATICCALL); settlement is also reentrancy-guarded.
contract TaskMarket is Deposits, Disputes, BatchSettlement {
    /// @notice Deploys the market.
    /// @param owner_ Owner of the parameters (the timelock, or the deployer who hands over).
    /// @param token_ The payment and bond token (TGRID).
    /// @param registry_ The ModelRegistry.
    /// @param params Initial parameters.
    constructor(address owner_, IERC20 token_, IModelRegistry registry_, Parameters memory params)
        MarketBase(owner_, token_, registry_, params)
    {}

    // ------------------------------------------------------------------ earnings and fees

    /// @inheritdoc ITaskMarket
    function withdrawEarnings() external returns (uint256 amount) {
        Earner storage e = _earners[msg.sender];
        amount = e.earnings;
        if (amount == 0) revert MarketNothingToWithdraw(msg.sender);
        e.earnings = 0;
        emit EarningsWithdrawn(msg.sender, amount);
        _send(msg.sender, amount);
    }

    /// @inheritdoc ITaskMarket
    function sweepFees() external returns (uint256 amount) {
        amount = _accruedFees;
        _accruedFees = 0;
        address treasury_ = _treasury;
        emit FeesSwept(treasury_, amount);
        _send(treasury_, amount);
    }

    // ------------------------------------------------------------------ governance

    /// @inheritdoc ITaskMarket
    function setSequencer(address account, bool allowed) external onlyOwner {
        if (account == address(0)) revert MarketZeroAddress();
        _sequencers[account] = allowed;
        emit SequencerUpdated(account, allowed);
    }

    /// @inheritdoc ITaskMarket
    function setVerifier(address verifier_, uint256[8] calldata proof, uint256 publicInput) external onlyOwner {
        _setVerifier(verifier_);
        IGroth16Verifier v = IGroth16Verifier(verifier_);
        if (!_accepts(v, proof, publicInput)) revert MarketVerifierRejectsGoodProof(verifier_);
        // A verifier that ignores the proof or the input accepts this one too. (For the largest
        // inputs the flip leaves the field, which a verifier must refuse as well.)
        if (_accepts(v, proof, publicInput ^ 1)) revert MarketVerifierAcceptsWrongInput(verifier_);
    }

    /// @inheritdoc ITaskMarket
    function setMaxBatchSize(uint256 maxBatchSize_) external onlyOwner {
        _setMaxBatchSize(maxBatchSize_);
    }

    /// @inheritdoc ITaskMarket
    function setFees(uint256 protocolFeeBps_, uint256 settlerShareBps_) external onlyOwner {
        _setFees(protocolFeeBps_, settlerShareBps_);
    }

    /// @inheritdoc ITaskMarket
    function setSelfSettlementWindow(uint256 window) external onlyOwner {
        _setSelfSettlementWindow(window);
    }

    /// @inheritdoc ITaskMarket
    function setDelays(
        uint256 maxDeadlineDelay_,
        uint256 disputeWindow_,
        uint256 depositUnlockDelay_,
        uint256 unbondingDelay_
    ) external onlyOwner {
        _setDelays(maxDeadlineDelay_, disputeWindow_, depositUnlockDelay_, unbondingDelay_);
    }

    /// @inheritdoc ITaskMarket
    function setMinPayment(uint256 minPayment_) external onlyOwner {
        _setMinPayment(minPayment_);
    }

    /// @inheritdoc ITaskMarket
    function setTreasury(address treasury_) external onlyOwner {
        _setTreasury(treasury_);
    }

    // ------------------------------------------------------------------ views

    /// @inheritdoc ITaskMarket
    function hashOrder(Order calldata order) external view returns (bytes32) {
        return _hashTypedDataV4(OrderLib.structHash(order));
    }

    /// @inheritdoc ITaskMarket
    function hashAcceptance(bytes32 orderHash) external view returns (bytes32) {
        return _hashTypedDataV4(OrderLib.acceptanceStructHash(orderHash));
    }

    /// @inheritdoc ITaskMarket
    function earner(address account) external view returns (Earner memory) {
        return _earners[account];
    }

    /// @inheritdoc ITaskMarket
    function isSequencer(address account) external view returns (bool) {
        return _sequencers[account];
    }

    /// @inheritdoc ITaskMarket
    function parameters() external view returns (Parameters memory p) {
        p.verifier = address(_verifier);
        p.maxBatchSize = _maxBatchSize;
        p.protocolFeeBps = _protocolFeeBps;
        p.settlerShareBps = _settlerShareBps;
        p.selfSettlementWindow = _selfSettlementWindow;
        p.maxDeadlineDelay = _maxDeadlineDelay;
        p.disputeWindow = _disputeWindow;
        p.depositUnlockDelay = _depositUnlockDelay;
        p.unbondingDelay = _unbondingDelay;
        p.minPayment = _minPayment;
        p.treasury = _treasury;
    }

    /// @inheritdoc ITaskMarket
    function accruedFees() external view returns (uint256) {
        return _accruedFees;
    }

    /// @inheritdoc ITaskMarket
    function token() external view returns (address) {
        return address(_token);
    }

    /// @inheritdoc ITaskMarket
    function registry() external view returns (address) {
        return address(_registry);
    }
}
