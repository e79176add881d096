"""Profiles over gRPC: create, get, list, edit membership, rename, delete, and their errors."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
RpcError = Callable[..., grpc.RpcError]


def install(stub: pb_grpc.RegistryServiceStub, *names: str) -> None:
    for name in names:
        stub.InstallServer(pb.InstallServerRequest(catalog_name=name))


def test_profile_lifecycle(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    install(stub, "time", "fetch", "git")
    created = stub.CreateProfile(pb.CreateProfileRequest(name="Web", description="w", servers=["fetch", "time"]))
    assert (created.name, list(created.servers)) == ("web", ["fetch", "time"])
    edited = stub.EditProfile(pb.EditProfileRequest(name="web", add_servers=["git", "time"], remove_servers=["fetch"]))
    assert list(edited.servers) == ["git", "time"]
    assert edited.updated_at.ToDatetime() >= created.updated_at.ToDatetime()
    renamed = stub.EditProfile(pb.EditProfileRequest(name="web", new_name="dev", description="dev tools"))
    assert (renamed.name, renamed.description, list(renamed.servers)) == ("dev", "dev tools", ["git", "time"])
    assert list(stub.GetServer(pb.GetServerRequest(name="git")).profiles) == ["dev"]
    assert [p.name for p in stub.ListProfiles(pb.ListProfilesRequest()).profiles] == ["dev"]
    deleted = stub.DeleteProfile(pb.DeleteProfileRequest(name="dev"))
    assert (deleted.name, list(deleted.removed_from_clients)) == ("dev", [])
    rpc_error(stub.GetProfile, pb.GetProfileRequest(name="dev"), Code.NOT_FOUND)
    assert len(stub.ListServers(pb.ListServersRequest()).servers) == 3  # servers outlive their profiles


def test_profile_errors(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    install(stub, "time")
    error = rpc_error(
        stub.CreateProfile, pb.CreateProfileRequest(name="p", servers=["time", "ghost", "nope"]), Code.NOT_FOUND
    )
    assert "server(s) ghost, nope not installed" in error.details()
    assert list(stub.ListProfiles(pb.ListProfilesRequest()).profiles) == []
    stub.CreateProfile(pb.CreateProfileRequest(name="p"))
    stub.CreateProfile(pb.CreateProfileRequest(name="q"))
    cases = [
        (stub.CreateProfile, pb.CreateProfileRequest(name="P"), Code.ALREADY_EXISTS, "profile 'p' already exists"),
        (stub.CreateProfile, pb.CreateProfileRequest(name="no way"), Code.INVALID_ARGUMENT, "invalid profile name"),
        (stub.EditProfile, pb.EditProfileRequest(name="p", add_servers=["ghost"]), Code.NOT_FOUND, "ghost"),
        (stub.EditProfile, pb.EditProfileRequest(name="p"), Code.INVALID_ARGUMENT, "nothing to change"),
        (stub.EditProfile, pb.EditProfileRequest(name="p", new_name="q"), Code.ALREADY_EXISTS, "'q' already exists"),
        (
            stub.EditProfile,
            pb.EditProfileRequest(name="p", add_servers=["time"], remove_servers=["time"]),
            Code.INVALID_ARGUMENT,
            "both added and removed",
        ),
        (stub.EditProfile, pb.EditProfileRequest(name="zz", description="x"), Code.NOT_FOUND, "profile 'zz' not found"),
        (stub.DeleteProfile, pb.DeleteProfileRequest(name="zz"), Code.NOT_FOUND, "profile 'zz' not found"),
    ]
    for method, request, code, message in cases:
        assert message in rpc_error(method, request, code).details()
    assert list(stub.GetProfile(pb.GetProfileRequest(name="p")).servers) == []
