"""Client RPCs and the cascades into client configs when servers are uninstalled or profiles deleted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import grpc
from ruamel.yaml import YAML

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
AGGREGATOR = "http://127.0.0.1:8765"  # the aggregator_url a registry with no served URL writes
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
    assert list(edited.notes) == []
    entries = {e.name: e for e in edited.client.entries}
    assert entries["time"].kind == "server"
    assert entries["time"].managed
    assert entries["jarvis-work"].kind == "profile"
    written = json.loads(path.read_text())["mcpServers"]
    # A server alone goes through Jarvis too: its one-server profile, under its tools' own names.
    assert written["time"] == {"url": f"{AGGREGATOR}/mcp/profile/time"}
    assert written["jarvis-work"] == {"url": f"{AGGREGATOR}/mcp/profile/work"}
    assert list(stub.GetProfile(pb.GetProfileRequest(name="time")).servers) == ["time"]
    assert config_value(stub, "servers.unprefixed_profiles") == ["time"]
    # The profiles clients use start with Jarvis, so a client's first look finds their servers running.
    assert config_value(stub, "servers.autostart_profiles") == ["time", "work"]

    done = stub.UninstallServer(pb.UninstallServerRequest(name="time"))
    assert list(done.removed_from_clients) == ["cursor"]
    assert list(done.removed_from_profiles) == ["time", "work"]
    deleted = stub.DeleteProfile(pb.DeleteProfileRequest(name="work"))
    assert list(deleted.removed_from_clients) == ["cursor"]
    assert json.loads(path.read_text())["mcpServers"] == {}


def test_jarvis_surfaces_by_name(stub: pb_grpc.RegistryServiceStub, home: Path) -> None:
    path = cursor_config(home)
    surfaces = ["jarvis", "discovery", "orchestrator", "debug"]
    edited = stub.EditClient(pb.EditClientRequest(name="cursor", add_surfaces=surfaces))
    assert list(edited.added) == ["jarvis", "jarvis-discovery", "jarvis-orchestrator", "jarvis-debug"]
    assert {e.name: e.kind for e in edited.client.entries} == dict.fromkeys(edited.added, "jarvis")
    written = json.loads(path.read_text())["mcpServers"]
    assert written == {
        "jarvis": {"url": f"{AGGREGATOR}/mcp/jarvis"},
        "jarvis-discovery": {"url": f"{AGGREGATOR}/mcp"},
        "jarvis-orchestrator": {"url": f"{AGGREGATOR}/mcp/orchestrator"},
        "jarvis-debug": {"url": f"{AGGREGATOR}/mcp/debug"},
    }
    removed = stub.EditClient(pb.EditClientRequest(name="cursor", remove_surfaces=["debug", "jarvis"]))
    assert list(removed.removed) == ["jarvis-debug", "jarvis"]
    assert set(json.loads(path.read_text())["mcpServers"]) == {"jarvis-discovery", "jarvis-orchestrator"}


def test_a_profile_of_the_servers_name_holding_others_is_not_taken_over(
    stub: pb_grpc.RegistryServiceStub, home: Path, rpc_error: RpcError
) -> None:
    cursor_config(home)
    stub.InstallServer(pb.InstallServerRequest(catalog_name="time"))
    stub.InstallServer(pb.InstallServerRequest(catalog_name="time", name="clock"))
    stub.CreateProfile(pb.CreateProfileRequest(name="time", servers=["time", "clock"]))
    error = rpc_error(
        stub.EditClient, pb.EditClientRequest(name="cursor", add_servers=["time"]), Code.FAILED_PRECONDITION
    )
    assert "profile 'time' holds clock, time" in error.details()
    assert "add profile:time" in error.details()
    assert list(stub.GetProfile(pb.GetProfileRequest(name="time")).servers) == ["clock", "time"]


def test_gemini_is_told_about_trusted_folders_and_continue_gets_its_schema_fields(
    stub: pb_grpc.RegistryServiceStub, home: Path
) -> None:
    (home / ".gemini").mkdir()
    (home / ".continue").mkdir()
    stub.InstallServer(pb.InstallServerRequest(catalog_name="time"))
    gemini = stub.EditClient(pb.EditClientRequest(name="gemini", add_servers=["time"]))
    assert len(gemini.notes) == 1
    assert "trust" in gemini.notes[0]
    assert "/permissions" in gemini.notes[0]
    assert json.loads((home / ".gemini" / "settings.json").read_text())["mcpServers"]["time"] == {
        "httpUrl": f"{AGGREGATOR}/mcp/profile/time"
    }
    stub.EditClient(pb.EditClientRequest(name="continue", add_servers=["time"]))
    written = YAML(typ="safe").load((home / ".continue" / "config.yaml").read_text())
    assert (written["name"], written["version"], written["schema"]) == ("Local Assistant", "1.0.0", "v1")
    assert written["mcpServers"] == [
        {"name": "time", "type": "streamable-http", "url": f"{AGGREGATOR}/mcp/profile/time"}
    ]


def config_value(stub: pb_grpc.RegistryServiceStub, key: str) -> object:
    return json.loads(stub.GetConfig(pb.GetConfigRequest(key=key)).value_json)


def test_edit_client_errors(stub: pb_grpc.RegistryServiceStub, home: Path, rpc_error: RpcError) -> None:
    cursor_config(home)
    error = rpc_error(stub.EditClient, pb.EditClientRequest(name="cursor", add_servers=["ghost"]), Code.NOT_FOUND)
    assert "server 'ghost' is not installed" in error.details()
    error = rpc_error(stub.EditClient, pb.EditClientRequest(name="cursor", add_profiles=["nope"]), Code.NOT_FOUND)
    assert "profile 'nope' not found" in error.details()
    error = rpc_error(stub.EditClient, pb.EditClientRequest(name="notepad", add_profiles=[]), Code.NOT_FOUND)
    assert "unknown client" in error.details()
    stub.InstallServer(pb.InstallServerRequest(catalog_name="time"))
    error = rpc_error(stub.EditClient, pb.EditClientRequest(name="notepad", add_servers=["time"]), Code.NOT_FOUND)
    assert "unknown client" in error.details()
    assert [p.name for p in stub.ListProfiles(pb.ListProfilesRequest()).profiles] == []  # nothing made for it


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
