// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Script} from "forge-std/Script.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IVotes} from "@openzeppelin/contracts/governance/utils/IVotes.sol";

import {TGRID} from "../token/TGRID.sol";
import {TGridGovernor} from "../governance/TGridGovernor.sol";
import {TGridTimelock} from "../governance/TGridTimelock.sol";
import {ModelRegistry} from "../registry/ModelRegistry.sol";
import {WrapVerifierDevnetInsecure} from "../verifier/WrapVerifierDevnetInsecure.sol";
import {WrapVerifierInsecureTest} from "../verifier/WrapVerifierInsecureTest.sol";
import {Groth16Verifier} from "../verifier/Groth16Verifier.sol";
import {Groth16KeyedVerifier} from "../verifier/Groth16KeyedVerifier.sol";
import {IGroth16Verifier} from "../interfaces/IGroth16Verifier.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ITaskMarket} from "../interfaces/market/ITaskMarket.sol";
import {TaskMarket} from "../market/TaskMarket.sol";

/// @notice What every generated verifier exposes besides `IGroth16Verifier`.
interface IKeyedGroth16Verifier is IGroth16Verifier {
    /// @notice Identifier of the verifying key the verifier was generated from.
    function VERIFYING_KEY_ID() external view returns (string memory);

    /// @notice sha256 of the verifying key's 18 words (EIP-197 order).
    function VERIFYING_KEY_DIGEST() external view returns (bytes32);
}

/// @title Deploy
/// @notice Deploys and wires the TensorGrid contracts (TGRID, the governance TimelockController and
/// TGridGovernor, ModelRegistry, the batch verifier and TaskMarket), hands every parameter to the
/// timelock and writes the addresses to a JSON file for off-chain tools (keys: chainId,
/// startBlock, token, timelock, governor, registry, market, verifier, verifyingKeyId, sequencer,
/// registryRoot, devnetModelId).
/// @dev Local anvil:
///   node_modules/.bin/anvil &
///   node_modules/.bin/forge script contracts/script/Deploy.s.sol --rpc-url http://127.0.0.1:8545 --broadcast
/// (or `bash scripts/foundry/deploy-local.sh`). Environment overrides (all optional): PRIVATE_KEY
/// (default on the devnet chain only: anvil account 0), TGRID_SEQUENCER, TGRID_TOKEN_HOLDER, TGRID_REGISTRY_ROOT,
/// TGRID_DEVNET_MODEL_ID (+ TGRID_DEVNET_CIRCUIT_DIGEST, TGRID_DEVNET_MODEL_URI), TGRID_VERIFIER,
/// TGRID_TIMELOCK_DELAY, TGRID_VOTING_DELAY, TGRID_VOTING_PERIOD, TGRID_DEPLOYMENTS_OUT
/// (default contracts/deployments/<chainId>.json), TGRID_VERIFIER_KEY (18 comma-separated key
/// words in EIP-197 order, as `tgrid-sequencer` prints them) with TGRID_VERIFIER_KEY_ID: deploy a
/// Groth16KeyedVerifier for that key instead.
/// The verifier (unless `Config.verifier` names one) is the generated
/// contracts/verifier/WrapVerifierDevnetInsecure.sol: the real wrap
/// circuit (production FRI parameters) under the INSECURE devnet key that
/// `tgrid-sequencer wrap --insecure-devnet-key` uses, so devnet batches settle with real proofs.
/// Its toxic waste is public: local devnets only; production deploys a ceremony key's verifier.
/// Outside the devnet chain id (31337) the script refuses to run without an explicit
/// PRIVATE_KEY, with any of anvil's public keys, and without a verifier (or with one of the
/// insecure verifiers shipped for devnets and tests).
/// Governance defaults are those of a real launch (see docs/contracts.md): votes start a day after
/// the proposal, last three days, need 0.1 % of the supply to propose and 4 % to pass, and the
/// timelock waits as long as the unbonding delay.
contract Deploy is Script {
    /// @notice TGRID_VERIFIER_KEY does not hold 18 words.
    /// @param count Number of words given.
    error BadVerifierKeyLength(uint256 count);

    /// @notice Outside the devnet chain, no verifier was given or it is a known insecure one.
    /// @param chainId The chain deployed to.
    /// @param verifier The verifier given (zero: none).
    error InsecureVerifierOutsideDevnet(uint256 chainId, address verifier);

    /// @notice Outside the devnet chain, PRIVATE_KEY is missing or is one of anvil's public keys.
    /// @param chainId The chain deployed to.
    error PublicKeyOutsideDevnet(uint256 chainId);

    /// @notice The timelock delay is shorter than the market's unbonding delay: a bonded provider
    /// could not leave before a passed proposal lands.
    /// @param timelockDelay The timelock delay.
    /// @param unbondingDelay The market's unbonding delay.
    error TimelockShorterThanUnbonding(uint256 timelockDelay, uint256 unbondingDelay);

    /// @notice The timelock delay is shorter than the market's deposit unlock delay: a passed vote
    /// could land before a poster who objects can withdraw its deposit.
    /// @param timelockDelay The timelock delay.
    /// @param depositUnlockDelay The market's deposit unlock delay.
    error TimelockShorterThanDepositUnlock(uint256 timelockDelay, uint256 depositUnlockDelay);

    /// @notice Chain id of local anvil devnets, the only chain the insecure defaults may reach.
    uint256 public constant DEVNET_CHAIN_ID = 31337;

    /// @notice Anvil's first default account key (public knowledge; local devnet only).
    uint256 internal constant ANVIL_KEY_0 = 0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80;
    /// @notice The mnemonic anvil derives its public accounts from.
    string internal constant ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

    /// @notice Everything `deploy` needs.
    struct Config {
        address admin; // the account sending the deployment calls; renounces everything at the end
        address tokenHolder; // receives the TGRID supply
        address sequencer; // granted the market's sequencer role (zero: none)
        uint256 timelockDelay;
        uint48 votingDelay;
        uint32 votingPeriod;
        uint256 proposalThreshold;
        uint256 quorumPercent;
        bytes32 registryRoot; // initial registry root (zero: none)
        uint256 rootGracePeriod;
        bytes32 devnetModelId; // registered at deployment when non-zero (needs registryRoot)
        bytes32 devnetCircuitDigest;
        string devnetModelUri;
        address verifier; // an already deployed generated verifier (zero: deploy the devnet wrap verifier)
        // The market's parameters; `deploy` overwrites `verifier` (the deployed or given verifier)
        // and `treasury` (the timelock).
        ITaskMarket.Parameters market;
    }

    /// @notice The deployed contracts.
    struct Deployment {
        TGRID token;
        TGridTimelock timelock;
        TGridGovernor governor;
        ModelRegistry registry;
        IKeyedGroth16Verifier verifier;
        TaskMarket market;
    }

    /// @notice Deploys to the chain of `--rpc-url` and writes the addresses JSON.
    /// @return d The deployment.
    function run() external returns (Deployment memory d) {
        uint256 key = vm.envOr("PRIVATE_KEY", uint256(0));
        if (block.chainid == DEVNET_CHAIN_ID && key == 0) key = ANVIL_KEY_0;
        if (block.chainid != DEVNET_CHAIN_ID && isPublicKey(key)) revert PublicKeyOutsideDevnet(block.chainid);
        Config memory c = defaultConfig(vm.addr(key));
        c.tokenHolder = vm.envOr("TGRID_TOKEN_HOLDER", c.tokenHolder);
        c.sequencer = vm.envOr("TGRID_SEQUENCER", c.sequencer);
        c.registryRoot = vm.envOr("TGRID_REGISTRY_ROOT", c.registryRoot);
        c.devnetModelId = vm.envOr("TGRID_DEVNET_MODEL_ID", c.devnetModelId);
        c.devnetCircuitDigest = vm.envOr("TGRID_DEVNET_CIRCUIT_DIGEST", c.devnetCircuitDigest);
        c.devnetModelUri = vm.envOr("TGRID_DEVNET_MODEL_URI", c.devnetModelUri);
        c.verifier = vm.envOr("TGRID_VERIFIER", c.verifier);
        c.timelockDelay = vm.envOr("TGRID_TIMELOCK_DELAY", c.timelockDelay);
        c.votingDelay = uint48(vm.envOr("TGRID_VOTING_DELAY", uint256(c.votingDelay)));
        c.votingPeriod = uint32(vm.envOr("TGRID_VOTING_PERIOD", uint256(c.votingPeriod)));

        uint256[] memory vkWords = vm.envOr("TGRID_VERIFIER_KEY", ",", new uint256[](0));

        vm.startBroadcast(key);
        if (vkWords.length != 0) {
            if (vkWords.length != 18) revert BadVerifierKeyLength(vkWords.length);
            uint256[18] memory vk;
            for (uint256 i = 0; i < 18; ++i) {
                vk[i] = vkWords[i];
            }
            c.verifier = address(new Groth16KeyedVerifier(vk, vm.envString("TGRID_VERIFIER_KEY_ID")));
        }
        d = deploy(c);
        vm.stopBroadcast();

        string memory out = vm.envOr(
            "TGRID_DEPLOYMENTS_OUT",
            string.concat(vm.projectRoot(), "/contracts/deployments/", vm.toString(block.chainid), ".json")
        );
        writeAddresses(d, c, out);
    }

    /// @notice True for no key (0) and for anvil's ten public keys.
    /// @param key A private key.
    /// @return Whether anyone may know it.
    function isPublicKey(uint256 key) public pure returns (bool) {
        if (key == 0) return true;
        for (uint32 i = 0; i < 10; ++i) {
            if (key == vm.deriveKey(ANVIL_MNEMONIC, i)) return true;
        }
        return false;
    }

    /// @notice Defaults; `admin` sends the deployment calls and gets the supply and the
    /// market's sequencer role.
    /// @param admin The deploying account.
    /// @return c The configuration.
    function defaultConfig(address admin) public pure returns (Config memory c) {
        c.admin = admin;
        c.tokenHolder = admin;
        c.sequencer = admin;
        // Governance (timestamp clock, seconds): see the contract's NatSpec and docs/contracts.md.
        c.timelockDelay = 8 days; // = market.unbondingDelay below
        c.votingDelay = 1 days;
        c.votingPeriod = 3 days;
        c.proposalThreshold = 1_000_000e18; // 0.1 % of the supply
        c.quorumPercent = 4;
        c.registryRoot = keccak256("tensorgrid devnet registry root v1");
        c.rootGracePeriod = 1 days;
        c.devnetModelId = keccak256("tensorgrid devnet model v1");
        c.devnetCircuitDigest = keccak256("tensorgrid devnet circuit v1");
        c.devnetModelUri = "devnet://model/v1";
        c.market.maxBatchSize = 256;
        c.market.protocolFeeBps = 100;
        c.market.settlerShareBps = 2_000;
        c.market.selfSettlementWindow = 1 hours;
        c.market.maxDeadlineDelay = 7 days;
        c.market.disputeWindow = 1 days;
        c.market.depositUnlockDelay = 8 days;
        c.market.unbondingDelay = 8 days;
        c.market.minPayment = 1e18;
    }

    /// @notice Deploys and wires everything; every call is made by `c.admin`, which ends with no
    /// role or ownership: the timelock owns the registry and the market (and is the market's
    /// treasury), the Governor proposes to it.
    /// @param c The configuration.
    /// @return d The deployment.
    function deploy(Config memory c) public returns (Deployment memory d) {
        if (block.chainid != DEVNET_CHAIN_ID && isInsecureVerifier(c.verifier)) {
            revert InsecureVerifierOutsideDevnet(block.chainid, c.verifier);
        }
        if (c.timelockDelay < c.market.unbondingDelay) {
            revert TimelockShorterThanUnbonding(c.timelockDelay, c.market.unbondingDelay);
        }
        if (c.timelockDelay < c.market.depositUnlockDelay) {
            revert TimelockShorterThanDepositUnlock(c.timelockDelay, c.market.depositUnlockDelay);
        }
        d.token = new TGRID(c.tokenHolder);

        address[] memory none = new address[](0);
        address[] memory anyone = new address[](1); // executor role open to everyone
        d.timelock = new TGridTimelock(c.timelockDelay, none, anyone, c.admin);
        d.governor = new TGridGovernor(
            IVotes(address(d.token)), d.timelock, c.votingDelay, c.votingPeriod, c.proposalThreshold, c.quorumPercent
        );
        d.timelock.grantRole(d.timelock.PROPOSER_ROLE(), address(d.governor));
        d.timelock.grantRole(d.timelock.CANCELLER_ROLE(), address(d.governor));

        d.verifier = c.verifier != address(0)
            ? IKeyedGroth16Verifier(c.verifier)
            : IKeyedGroth16Verifier(address(new WrapVerifierDevnetInsecure()));
        d.registry = new ModelRegistry(c.admin, bytes32(0), c.rootGracePeriod);
        if (c.devnetModelId != bytes32(0)) {
            d.registry.registerModel(c.devnetModelId, c.devnetCircuitDigest, c.devnetModelUri, c.registryRoot);
        } else if (c.registryRoot != bytes32(0)) {
            d.registry.setRegistryRoot(c.registryRoot);
        }

        c.market.verifier = address(d.verifier);
        c.market.treasury = address(d.timelock);
        d.market = new TaskMarket(c.admin, IERC20(address(d.token)), IModelRegistry(address(d.registry)), c.market);
        if (c.sequencer != address(0)) d.market.setSequencer(c.sequencer, true);

        d.registry.transferOwnership(address(d.timelock));
        d.market.transferOwnership(address(d.timelock));
        d.timelock.renounceRole(d.timelock.DEFAULT_ADMIN_ROLE(), c.admin);
    }

    /// @notice True for no verifier and for the verifiers whose keys are public: the devnet wrap
    /// verifier, the test-parameter wrap verifier and the one-constraint test verifier (recognized
    /// by their code, not by what they call themselves), and any verifier built for the two wrap
    /// keys (recognized by the digest of its key words).
    /// @param verifier A verifier address (zero: none).
    /// @return Whether proofs for it can be forged.
    function isInsecureVerifier(address verifier) public view returns (bool) {
        if (verifier == address(0)) return true;
        bytes32 h = verifier.codehash;
        if (
            h == keccak256(type(WrapVerifierDevnetInsecure).runtimeCode)
                || h == keccak256(type(WrapVerifierInsecureTest).runtimeCode)
                || h == keccak256(type(Groth16Verifier).runtimeCode)
        ) return true;
        try IKeyedGroth16Verifier(verifier).VERIFYING_KEY_DIGEST() returns (bytes32 digest) {
            // The generated verifiers' digests are compile-time constants of their source.
            return digest == 0x827112031abcb8017c32b9ad02a5b411034c26190379285827a5b259ba660d53
                || digest == 0xc8f54b39a6e206c828ba84ec2fc5ccd316339f90e8d93fdc3cd13e2b6b07dca0;
        } catch {
            return false;
        }
    }

    /// @notice Writes the deployment's addresses and key parameters as JSON to `path`.
    /// @param d The deployment.
    /// @param c Its configuration.
    /// @param path Output file.
    function writeAddresses(Deployment memory d, Config memory c, string memory path) public {
        string memory k = "deployment";
        vm.serializeUint(k, "chainId", block.chainid);
        vm.serializeUint(k, "startBlock", block.number); // scan events from here
        vm.serializeAddress(k, "token", address(d.token));
        vm.serializeAddress(k, "timelock", address(d.timelock));
        vm.serializeAddress(k, "governor", address(d.governor));
        vm.serializeAddress(k, "registry", address(d.registry));
        vm.serializeAddress(k, "market", address(d.market));
        vm.serializeAddress(k, "verifier", address(d.verifier));
        vm.serializeString(k, "verifyingKeyId", d.verifier.VERIFYING_KEY_ID());
        vm.serializeAddress(k, "sequencer", c.sequencer);
        vm.serializeBytes32(k, "registryRoot", d.registry.registryRoot());
        string memory json = vm.serializeBytes32(k, "devnetModelId", c.devnetModelId);
        vm.createDir(_dirname(path), true);
        vm.writeJson(json, path);
    }

    /// @dev The part of `path` before its last '/' ("." if none).
    function _dirname(string memory path) internal pure returns (string memory) {
        bytes memory b = bytes(path);
        uint256 end = b.length;
        while (end > 0 && b[end - 1] != "/") --end;
        if (end == 0) return ".";
        bytes memory dir = new bytes(end - 1);
        for (uint256 i = 0; i + 1 < end; ++i) {
            dir[i] = b[i];
        }
        return dir.length == 0 ? "/" : string(dir);
    }
}
