"""Installed servers over gRPC: install, create, edit, get, list, search, uninstall, and their errors."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
RpcError = Callable[..., grpc.RpcError]


def stdio(command: str = "uvx", *args: str, **env: str) -> pb.LaunchSpec:
    return pb.LaunchSpec(transport=pb.TRANSPORT_STDIO, command=command, args=args, env=env)


def test_install_from_catalog(stub: pb_grpc.RegistryServiceStub) -> None:
    server = stub.InstallServer(pb.InstallServerRequest(catalog_name="Time"))
    assert server.name == "time"
    assert server.catalog_name == "time"
    assert server.launch.transport == pb.TRANSPORT_STDIO
    assert (server.launch.command, list(server.launch.args)) == ("uvx", ["mcp-server-time"])
    assert server.status == "not-hosted"
    assert {t.name for t in server.tools} == {"get_current_time", "convert_time"}
    assert server.created_at.seconds > 0
    assert stub.GetCatalogEntry(pb.GetCatalogEntryRequest(name="time")).installed
    assert stub.GetServer(pb.GetServerRequest(name="TIME")) == server
    assert [s.name for s in stub.ListServers(pb.ListServersRequest()).servers] == ["time"]


def test_install_needs_required_env(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    error = rpc_error(stub.InstallServer, pb.InstallServerRequest(catalog_name="slack"), Code.INVALID_ARGUMENT)
    assert "SLACK_BOT_TOKEN, SLACK_TEAM_ID" in error.details()
    assert "env" in error.details()
    server = stub.InstallServer(
        pb.InstallServerRequest(
            catalog_name="slack", name="team-slack", env={"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_TEAM_ID": "T1"}
        )
    )
    assert server.name == "team-slack"
    assert dict(server.launch.env) == {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_TEAM_ID": "T1"}


def test_install_errors(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    error = rpc_error(stub.InstallServer, pb.InstallServerRequest(catalog_name="nope"), Code.NOT_FOUND)
    assert "catalog entry 'nope' not found" in error.details()
    stub.InstallServer(pb.InstallServerRequest(catalog_name="fetch"))
    error = rpc_error(stub.InstallServer, pb.InstallServerRequest(catalog_name="fetch"), Code.ALREADY_EXISTS)
    assert "server 'fetch' already exists" in error.details()
    error = rpc_error(
        stub.InstallServer, pb.InstallServerRequest(catalog_name="fetch", name="Bad Name"), Code.INVALID_ARGUMENT
    )
    assert "lowercase letters, digits" in error.details()


def test_create_each_transport(stub: pb_grpc.RegistryServiceStub) -> None:
    local = stub.CreateServer(pb.CreateServerRequest(name="Mine", description="d", launch=stdio("node", "s.js", A="1")))
    assert local.name == "mine"
    assert local.catalog_name == ""
    assert dict(local.launch.env) == {"A": "1"}
    remote = stub.CreateServer(
        pb.CreateServerRequest(
            name="remote",
            launch=pb.LaunchSpec(
                transport=pb.TRANSPORT_STREAMABLE_HTTP, url="https://mcp.example.com/mcp", headers={"X-Key": "k"}
            ),
        )
    )
    assert remote.launch.url == "https://mcp.example.com/mcp"
    box = stub.CreateServer(
        pb.CreateServerRequest(
            name="box",
            launch=pb.LaunchSpec(transport=pb.TRANSPORT_CONTAINER, image="ghcr.io/org/box:1", args=["--stdio"]),
        )
    )
    assert box.launch.transport == pb.TRANSPORT_CONTAINER
    assert box.launch.image == "ghcr.io/org/box:1"


@pytest.mark.parametrize(
    ("launch", "message"),
    [
        (pb.LaunchSpec(), "launch.transport is required"),
        (pb.LaunchSpec(transport=pb.TRANSPORT_STDIO), "a stdio server needs a command"),
        (pb.LaunchSpec(transport=pb.TRANSPORT_STREAMABLE_HTTP, url="ftp://x"), "http:// or https://"),
        (pb.LaunchSpec(transport=pb.TRANSPORT_STREAMABLE_HTTP, url="http://169.254.169.254/"), "SSRF"),
        (pb.LaunchSpec(transport=pb.TRANSPORT_CONTAINER), "a container server needs an image"),
    ],
)
def test_create_validates_launch(
    stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError, launch: pb.LaunchSpec, message: str
) -> None:
    error = rpc_error(stub.CreateServer, pb.CreateServerRequest(name="x", launch=launch), Code.INVALID_ARGUMENT)
    assert message in error.details()
    assert stub.ListServers(pb.ListServersRequest()).servers == []


def test_edit_partial_updates(stub: pb_grpc.RegistryServiceStub) -> None:
    stub.CreateServer(pb.CreateServerRequest(name="tool", launch=stdio("uvx", "a", KEEP="1", DROP="2")))
    edited = stub.EditServer(
        pb.EditServerRequest(name="tool", args=["b"], set_env={"NEW": "3"}, unset_env=["DROP"], cwd="/srv")
    )
    assert list(edited.launch.args) == ["a", "b"]
    assert dict(edited.launch.env) == {"KEEP": "1", "NEW": "3"}
    assert (edited.launch.cwd, edited.launch.command, edited.description) == ("/srv", "uvx", "")
    edited = stub.EditServer(pb.EditServerRequest(name="tool", replace_args=True, description="", new_name="Tool2"))
    assert (edited.name, list(edited.launch.args)) == ("tool2", [])
    assert edited.updated_at.ToDatetime() >= edited.created_at.ToDatetime()


def test_edit_errors(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    stub.CreateServer(pb.CreateServerRequest(name="a", launch=stdio()))
    stub.CreateServer(pb.CreateServerRequest(name="b", launch=stdio()))
    cases = [
        (pb.EditServerRequest(name="zzz", description="x"), Code.NOT_FOUND, "server 'zzz' is not installed"),
        (pb.EditServerRequest(name="a"), Code.INVALID_ARGUMENT, "nothing to change"),
        (pb.EditServerRequest(name="a", new_name="b"), Code.ALREADY_EXISTS, "server 'b' already exists"),
        (
            pb.EditServerRequest(name="a", url="https://x.example"),
            Code.INVALID_ARGUMENT,
            "url does not apply to a stdio server",
        ),
        (pb.EditServerRequest(name="a", command=""), Code.INVALID_ARGUMENT, "needs a command"),
        (pb.EditServerRequest(name="a", unset_env=["NOPE"]), Code.INVALID_ARGUMENT, "no environment variable(s) NOPE"),
    ]
    for request, code, message in cases:
        assert message in rpc_error(stub.EditServer, request, code).details()
    assert stub.GetServer(pb.GetServerRequest(name="a")).launch.command == "uvx"


def test_edit_merges_a_remote_servers_headers(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    launch = pb.LaunchSpec(
        transport=pb.TRANSPORT_STREAMABLE_HTTP, url="https://a.example/mcp", headers={"X-Keep": "1", "X-Drop": "2"}
    )
    stub.CreateServer(pb.CreateServerRequest(name="r", launch=launch))
    edited = stub.EditServer(pb.EditServerRequest(name="r", set_headers={"X-New": "3"}, unset_headers=["X-Drop"]))
    assert dict(edited.launch.headers) == {"X-Keep": "1", "X-New": "3"}
    cases = [
        (pb.EditServerRequest(name="r", unset_headers=["X-Nope"]), "no header(s) X-Nope"),
        (pb.EditServerRequest(name="r", set_headers={"X-Keep": "4"}, unset_headers=["X-Keep"]), "both set and unset"),
        (pb.EditServerRequest(name="r", set_headers={"Bad Name": "1"}), "invalid header name 'Bad Name'"),
        (pb.EditServerRequest(name="r", set_headers={"X-Evil": "1\r\nInjected: 2"}), "line break"),
    ]
    for request, message in cases:
        assert message in rpc_error(stub.EditServer, request, Code.INVALID_ARGUMENT).details()
    assert dict(stub.GetServer(pb.GetServerRequest(name="r")).launch.headers) == {"X-Keep": "1", "X-New": "3"}


def test_edit_remote_url_is_checked(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    stub.CreateServer(
        pb.CreateServerRequest(
            name="r", launch=pb.LaunchSpec(transport=pb.TRANSPORT_STREAMABLE_HTTP, url="https://a.example/mcp")
        )
    )
    error = rpc_error(stub.EditServer, pb.EditServerRequest(name="r", url="http://[fe80::1]/"), Code.INVALID_ARGUMENT)
    assert "link-local" in error.details()
    assert stub.EditServer(pb.EditServerRequest(name="r", url="https://b.example/mcp")).launch.url.startswith(
        "https://b"
    )


def test_uninstall_removes_from_profiles(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    stub.InstallServer(pb.InstallServerRequest(catalog_name="time"))
    stub.CreateProfile(pb.CreateProfileRequest(name="p1", servers=["time"]))
    stub.CreateProfile(pb.CreateProfileRequest(name="p2", servers=["time"]))
    done = stub.UninstallServer(pb.UninstallServerRequest(name="time"))
    assert (done.name, list(done.removed_from_profiles), list(done.removed_from_clients)) == ("time", ["p1", "p2"], [])
    assert list(stub.GetProfile(pb.GetProfileRequest(name="p1")).servers) == []
    assert not stub.GetCatalogEntry(pb.GetCatalogEntryRequest(name="time")).installed
    error = rpc_error(stub.UninstallServer, pb.UninstallServerRequest(name="time"), Code.NOT_FOUND)
    assert "server 'time' is not installed" in error.details()
    rpc_error(stub.GetServer, pb.GetServerRequest(name="time"), Code.NOT_FOUND)


def test_search_ranks_and_reports_tools(stub: pb_grpc.RegistryServiceStub) -> None:
    stub.InstallServer(pb.InstallServerRequest(catalog_name="git"))
    hits = stub.SearchServers(pb.SearchServersRequest(query="git")).hits
    assert hits[0].name == "git"
    assert hits[0].installed
    assert hits[0].score > 0
    assert {"github", "gitlab"} <= {h.name for h in hits}
    hits = stub.SearchServers(pb.SearchServersRequest(query="take a browser screenshot", limit=1)).hits
    assert len(hits) == 1
    assert hits[0].name in {"puppeteer", "playwright"}
    assert not hits[0].installed
    assert any("screenshot" in t for t in hits[0].matched_tools)
    installed = stub.SearchServers(pb.SearchServersRequest(query="screenshot", installed_only=True)).hits
    assert list(installed) == []
