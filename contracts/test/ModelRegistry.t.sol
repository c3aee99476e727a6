// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

import {TGridTest} from "./utils/TGridTest.sol";
import {IModelRegistry} from "../interfaces/IModelRegistry.sol";
import {ModelRegistry} from "../registry/ModelRegistry.sol";

contract ModelRegistryTest is TGridTest {
    function test_deployment_registeredDevnetModelAndRoot() public view {
        assertEq(registry.registryRoot(), ROOT_A);
        assertEq(registry.modelCount(), 1);
        assertEq(registry.modelIdAt(0), MODEL);
        IModelRegistry.Model memory m = registry.model(MODEL);
        assertEq(m.circuitDigest, DIGEST);
        assertTrue(m.active);
        assertEq(m.uri, "ipfs://lenet5");
        assertEq(registry.rootHistoryLength(), 1);
        assertEq(registry.rootHistoryAt(0).root, ROOT_A);
        assertEq(registry.rootGracePeriod(), 1 days);
        assertEq(registry.owner(), address(timelock));
    }

    function test_registerModel_addsModelAndUpdatesRoot() public {
        vm.expectEmit(address(registry));
        emit IModelRegistry.ModelRegistered(MODEL2, keccak256("d2"), "ipfs://digits");
        vm.expectEmit(address(registry));
        emit IModelRegistry.RegistryRootUpdated(ROOT_A, ROOT_B, block.timestamp + 1 days);
        vm.prank(address(timelock));
        registry.registerModel(MODEL2, keccak256("d2"), "ipfs://digits", ROOT_B);
        assertEq(registry.modelCount(), 2);
        assertEq(registry.modelIdAt(1), MODEL2);
        assertTrue(registry.isModelActive(MODEL2));
        assertEq(registry.registryRoot(), ROOT_B);
        assertEq(registry.rootHistoryLength(), 2);
        assertEq(registry.rootHistoryAt(1).root, ROOT_B);
        assertEq(registry.rootHistoryAt(1).activatedAt, block.timestamp);
    }

    function test_RevertWhen_registerModelTwice() public {
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryModelExists.selector, MODEL));
        vm.prank(address(timelock));
        registry.registerModel(MODEL, DIGEST, "", ROOT_B);
    }

    function test_RevertWhen_registerZeroModel() public {
        vm.expectRevert(IModelRegistry.ModelRegistryZeroModelId.selector);
        vm.prank(address(timelock));
        registry.registerModel(bytes32(0), DIGEST, "", ROOT_B);
    }

    function test_deregisterModel_deactivatesAndUpdatesRoot() public {
        vm.expectEmit(address(registry));
        emit IModelRegistry.ModelDeregistered(MODEL);
        vm.prank(address(timelock));
        registry.deregisterModel(MODEL, ROOT_B);
        assertFalse(registry.isModelActive(MODEL));
        assertEq(registry.modelCount(), 1);
        assertEq(registry.registryRoot(), ROOT_B);
    }

    function test_RevertWhen_deregisterInactiveModel() public {
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryModelNotActive.selector, MODEL2));
        vm.prank(address(timelock));
        registry.deregisterModel(MODEL2, ROOT_B);
    }

    function test_RevertWhen_rootZeroOrUnchanged() public {
        vm.startPrank(address(timelock));
        vm.expectRevert(IModelRegistry.ModelRegistryZeroRoot.selector);
        registry.setRegistryRoot(bytes32(0));
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryRootUnchanged.selector, ROOT_A));
        registry.setRegistryRoot(ROOT_A);
        vm.stopPrank();
    }

    function test_rootStatus_graceRule() public {
        (IModelRegistry.RootStatus s, uint256 until) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Current));
        assertEq(until, 0);

        vm.prank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        uint256 end = block.timestamp + 1 days;

        (s, until) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Grace));
        assertEq(until, end);
        (s,) = registry.rootStatus(ROOT_B);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Current));

        vm.warp(end - 1);
        (s,) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Grace));
        vm.warp(end);
        (s, until) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Expired));
        assertEq(until, end);

        (s,) = registry.rootStatus(keccak256("never"));
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Unknown));
        (s,) = registry.rootStatus(bytes32(0));
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Unknown));
    }

    function test_rootStatus_zeroGraceRevokesAtOnce() public {
        vm.startPrank(address(timelock));
        registry.setRootGracePeriod(0);
        registry.setRegistryRoot(ROOT_B);
        vm.stopPrank();
        (IModelRegistry.RootStatus s,) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Expired));
    }

    function test_rootStatus_reactivatedRootIsCurrent() public {
        vm.startPrank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        skip(2 days);
        registry.setRegistryRoot(ROOT_A);
        vm.stopPrank();
        (IModelRegistry.RootStatus s,) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Current));
        (s,) = registry.rootStatus(ROOT_B);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Grace));
        assertEq(registry.rootHistoryLength(), 3);
    }

    function testFuzz_rootStatus_graceBoundary(uint32 grace, uint32 elapsed) public {
        uint256 g = bound(grace, 0, 30 days);
        uint256 e = bound(elapsed, 0, 60 days);
        vm.startPrank(address(timelock));
        registry.setRootGracePeriod(g);
        registry.setRegistryRoot(ROOT_B);
        vm.stopPrank();
        skip(e);
        (IModelRegistry.RootStatus s,) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(e < g ? IModelRegistry.RootStatus.Grace : IModelRegistry.RootStatus.Expired));
    }

    function test_rootStatus_graceIncreaseDoesNotReviveExpiredRoot() public {
        vm.startPrank(address(timelock));
        registry.setRootGracePeriod(0);
        registry.setRegistryRoot(ROOT_B);
        registry.setRootGracePeriod(30 days);
        vm.stopPrank();
        (IModelRegistry.RootStatus s, uint256 until) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Expired));
        assertEq(until, block.timestamp);
    }

    function test_rootStatus_graceChangeKeepsOpenWindow() public {
        vm.startPrank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        uint256 end = block.timestamp + 1 days;
        registry.setRootGracePeriod(0);
        vm.stopPrank();
        (IModelRegistry.RootStatus s, uint256 until) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Grace));
        assertEq(until, end);
    }

    function test_revokeRoot_staysRevoked() public {
        vm.startPrank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        skip(1 hours);
        vm.expectEmit(address(registry));
        emit IModelRegistry.RegistryRootRevoked(ROOT_A);
        registry.revokeRoot(ROOT_A);
        (IModelRegistry.RootStatus s, uint256 until) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Revoked));
        assertEq(until, block.timestamp);

        // Neither a longer grace period nor setting it again brings it back.
        registry.setRootGracePeriod(30 days);
        (s,) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Revoked));
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryRootRevoked.selector, ROOT_A));
        registry.setRegistryRoot(ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryRootRevoked.selector, ROOT_A));
        registry.registerModel(MODEL2, DIGEST, "", ROOT_A);
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryRootRevoked.selector, ROOT_A));
        registry.revokeRoot(ROOT_A);
        vm.stopPrank();
        skip(60 days);
        (s,) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Revoked));
    }

    function test_revokeRoot_afterExpiryKeepsWindowEnd() public {
        vm.startPrank(address(timelock));
        registry.setRegistryRoot(ROOT_B);
        uint256 end = block.timestamp + 1 days;
        skip(2 days);
        registry.revokeRoot(ROOT_A);
        vm.stopPrank();
        (IModelRegistry.RootStatus s, uint256 until) = registry.rootStatus(ROOT_A);
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Revoked));
        assertEq(until, end);
    }

    function test_RevertWhen_revokeCurrentOrUnknownRoot() public {
        vm.startPrank(address(timelock));
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryRevokeCurrentRoot.selector, ROOT_A));
        registry.revokeRoot(ROOT_A);
        bytes32 never = keccak256("never");
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryUnknownRoot.selector, never));
        registry.revokeRoot(never);
        vm.expectRevert(abi.encodeWithSelector(IModelRegistry.ModelRegistryUnknownRoot.selector, bytes32(0)));
        registry.revokeRoot(bytes32(0));
        vm.stopPrank();
    }

    function test_setRootGracePeriod_emits() public {
        vm.expectEmit(address(registry));
        emit IModelRegistry.RootGracePeriodUpdated(3 days);
        vm.prank(address(timelock));
        registry.setRootGracePeriod(3 days);
        assertEq(registry.rootGracePeriod(), 3 days);
    }

    function test_RevertWhen_gracePeriodTooLong() public {
        vm.expectRevert(
            abi.encodeWithSelector(IModelRegistry.ModelRegistryGracePeriodTooLong.selector, 31 days, 30 days)
        );
        vm.prank(address(timelock));
        registry.setRootGracePeriod(31 days);
    }

    function test_RevertWhen_notOwner() public {
        vm.startPrank(stranger);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        registry.setRegistryRoot(ROOT_B);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        registry.registerModel(MODEL2, DIGEST, "", ROOT_B);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        registry.deregisterModel(MODEL, ROOT_B);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        registry.setRootGracePeriod(1);
        vm.expectRevert(abi.encodeWithSelector(Ownable.OwnableUnauthorizedAccount.selector, stranger));
        registry.revokeRoot(ROOT_A);
        vm.stopPrank();
    }

    function test_constructor_withoutInitialRoot() public {
        ModelRegistry fresh = new ModelRegistry(address(this), bytes32(0), 0);
        assertEq(fresh.registryRoot(), bytes32(0));
        assertEq(fresh.rootHistoryLength(), 0);
        (IModelRegistry.RootStatus s,) = fresh.rootStatus(bytes32(0));
        assertEq(uint8(s), uint8(IModelRegistry.RootStatus.Unknown));
    }
}
