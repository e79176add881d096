"""Client RPCs and the cascades into client configs when servers are uninstalled or profiles deleted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import grpc

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
RpcError = Callable[..., grpc.RpcError]


def cursor_config(home: Path) -> Path:
    (home / ".cursor").mkdir(exist_ok=True)
    return home / ".cursor" / "mcp.json"


def test_list_clients(stub: pb_grpc.RegistryServiceStub, home: Path) -> None:
    cursor_config(home)
    clients = {c.name: c for c in stub.ListClients(pb.ListClientsRequest()).clients}
    assert {"claude-desktop", "claude-code", "cursor", "vscode"} <= set(clients)
    assert clients["cursor"].detected
    assert not clients["cursor"].config_exists
    assert clients["cursor"].config_path == str(home / ".cursor" / "mcp.json")


def test_edit_client_and_cascades(stub: pb_grpc.RegistryServiceStub, home: Path) -> None:
    path = cursor_config(home)
    stub.InstallServer(pb.InstallServerRequest(catalog_name="time"))
    stub.CreateProfile(pb.CreateProfileRequest(name="work", servers=["time"]))
    edited = stub.EditClient(pb.EditClientRequest(name="cursor", add_servers=["time"], add_profiles=["work"]))
    assert sorted(edited.added) == ["jarvis-work", "time"]
    assert edited.backup_path == ""
    entries = {e.name: e for e in edited.client.entries}
    assert entries["time"].kind == "server"
    assert entries["time"].managed
    assert entries["jarvis-work"].kind == "profile"
    written = json.loads(path.read_text())["mcpServers"]
    assert written["time"]["command"] == "uvx"

    done = stub.UninstallServer(pb.UninstallServerRequest(name="time"))
    assert list(done.removed_from_clients) == ["cursor"]
    assert list(done.removed_from_profiles) == ["work"]
    deleted = stub.DeleteProfile(pb.DeleteProfileRequest(name="work"))
    assert list(deleted.removed_from_clients) == ["cursor"]
    assert json.loads(path.read_text())["mcpServers"] == {}


def test_edit_client_errors(stub: pb_grpc.RegistryServiceStub, home: Path, rpc_error: RpcError) -> None:
    cursor_config(home)
    error = rpc_error(stub.EditClient, pb.EditClientRequest(name="cursor", add_servers=["ghost"]), Code.NOT_FOUND)
    assert "server 'ghost' is not installed" in error.details()
    error = rpc_error(stub.EditClient, pb.EditClientRequest(name="cursor", add_profiles=["nope"]), Code.NOT_FOUND)
    assert "profile 'nope' not found" in error.details()
    error = rpc_error(stub.EditClient, pb.EditClientRequest(name="notepad", add_profiles=[]), Code.NOT_FOUND)
    assert "unknown client" in error.details()


def test_config_path_and_import(stub: pb_grpc.RegistryServiceStub, home: Path, tmp_path: Path) -> None:
    custom = tmp_path / "elsewhere" / "mcp.json"
    custom.parent.mkdir()
    custom.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "Notes": {"command": "uvx", "args": ["notes-mcp"]},
                    "remote": {"url": "https://mcp.example.com/mcp"},
                    "meta": {"url": "http://169.254.169.254/mcp"},
                }
            }
        )
    )
    default = stub.ClientConfigPath(pb.ClientConfigPathRequest(name="cursor"))
    assert (default.custom, default.exists) == (False, False)
    changed = stub.ClientConfigPath(pb.ClientConfigPathRequest(name="cursor", path=str(custom)))
    assert (changed.name, changed.path, changed.custom, changed.exists) == ("cursor", str(custom), True, True)
    result = stub.ImportClient(pb.ImportClientRequest(name="cursor"))
    assert sorted(result.imported) == ["notes", "remote"]
    assert len(result.skipped) == 1
    assert result.skipped[0].startswith("meta: ")
    assert "SSRF" in result.skipped[0]
    again = stub.ImportClient(pb.ImportClientRequest(name="cursor"))
    assert list(again.imported) == []
    assert any("already exists" in s for s in again.skipped)
    notes = stub.GetServer(pb.GetServerRequest(name="notes"))
    assert notes.description == "imported from cursor"
    assert list(notes.launch.args) == ["notes-mcp"]
