"""The catalog's filesystem server serves the directories an install names, else the project roots, never the
directory Jarvis started in (`.`), and the install answer says which (issue 37 item 8)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
RpcError = Callable[..., grpc.RpcError]
PACKAGE = ["-y", "@modelcontextprotocol/server-filesystem"]


def test_unasked_it_serves_the_project_roots(stub: pb_grpc.RegistryServiceStub, home: Path) -> None:
    server = stub.InstallServer(pb.InstallServerRequest(catalog_name="filesystem"))
    assert list(server.launch.args) == [*PACKAGE, str(home)]  # the roots default to the home directory
    assert server.note == f"serves {home}: the project roots (JARVIS_PROJECT_ROOTS), as the install named none"
    assert stub.GetServer(pb.GetServerRequest(name="filesystem")).note == ""  # the install's answer only


def test_it_serves_the_directories_named(stub: pb_grpc.RegistryServiceStub, tmp_path: Path) -> None:
    src, docs = tmp_path / "src", tmp_path / "docs"
    src.mkdir()
    docs.mkdir()
    request = pb.InstallServerRequest(catalog_name="filesystem", name="files", directories=[str(src), f"{docs}/"])
    server = stub.InstallServer(request)
    assert list(server.launch.args) == [*PACKAGE, str(src), str(docs)]
    assert server.note == f"serves {src}, {docs}: the directories given"


def test_bad_directories_are_refused_with_what_to_do(
    stub: pb_grpc.RegistryServiceStub, tmp_path: Path, rpc_error: RpcError
) -> None:
    def refused(*directories: str, entry: str = "filesystem") -> str:
        request = pb.InstallServerRequest(catalog_name=entry, directories=directories)
        return str(rpc_error(stub.InstallServer, request, Code.INVALID_ARGUMENT).details())

    assert "directory '.' is not absolute; give full paths" in refused(".")
    assert f"directory '{tmp_path / 'gone'}' does not exist here" in refused(str(tmp_path / "gone"))
    assert "'time' serves no directories; install it without any" in refused(str(tmp_path), entry="time")
    assert [s.name for s in stub.ListServers(pb.ListServersRequest()).servers] == []
