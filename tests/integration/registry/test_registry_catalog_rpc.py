"""Catalog over gRPC: list, page, filter, get, import of both external formats (idempotent), errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import grpc

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
RpcError = Callable[..., grpc.RpcError]
LIVEMCPBENCH = Path("/work/shared/datasets/livemcpbench/tools.json")


def test_list_and_page_bundled_catalog(stub: pb_grpc.RegistryServiceStub) -> None:
    full = stub.ListCatalog(pb.ListCatalogRequest())
    assert full.total == len(full.entries) >= 15
    names = [e.name for e in full.entries]
    assert names == sorted(names)
    page = stub.ListCatalog(pb.ListCatalogRequest(limit=5, offset=5))
    assert [e.name for e in page.entries] == names[5:10]
    assert page.total == full.total
    browsers = stub.ListCatalog(pb.ListCatalogRequest(category="browser"))
    assert {e.name for e in browsers.entries} == {"puppeteer", "playwright"}
    assert browsers.total == 2


def test_get_entry(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    github = stub.GetCatalogEntry(pb.GetCatalogEntryRequest(name="github"))
    assert github.source == "bundled"
    assert list(github.required_env) == ["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert github.homepage.startswith("https://")
    assert "create_pull_request" in [t.name for t in github.tools]
    sentry = stub.GetCatalogEntry(pb.GetCatalogEntryRequest(name="sentry"))
    assert sentry.launch.transport == pb.TRANSPORT_STREAMABLE_HTTP
    error = rpc_error(stub.GetCatalogEntry, pb.GetCatalogEntryRequest(name="unknown"), Code.NOT_FOUND)
    assert "catalog entry 'unknown' not found" in error.details()


def test_import_livemcpbench_is_idempotent(stub: pb_grpc.RegistryServiceStub) -> None:
    before = stub.ListCatalog(pb.ListCatalogRequest()).total
    content = LIVEMCPBENCH.read_bytes()
    first = stub.ImportCatalog(pb.ImportCatalogRequest(content=content, source="tools.json"))
    assert first.format == "livemcpbench"
    assert list(first.skipped) == []
    assert first.imported + first.updated == 70 == len(first.names)
    second = stub.ImportCatalog(pb.ImportCatalogRequest(content=content, source="tools.json", format="livemcpbench"))
    assert (second.imported, second.updated) == (0, 70)
    assert stub.ListCatalog(pb.ListCatalogRequest()).total == before + first.imported
    entry = stub.GetCatalogEntry(pb.GetCatalogEntryRequest(name="yahoo-finance"))
    assert entry.source == "tools.json"
    assert entry.category == "Finance"
    assert json.loads(entry.tools[0].input_schema_json)["type"] == "object"
    # A re-bootstrap refreshes bundled entries but leaves ones the user imported over them.
    stub.Bootstrap(pb.BootstrapRequest())
    assert stub.GetCatalogEntry(pb.GetCatalogEntryRequest(name="git")).source == "tools.json"


def test_import_server_json_with_skips(stub: pb_grpc.RegistryServiceStub) -> None:
    doc = [
        {
            "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
            "name": "io.github.acme/notes",
            "description": "Notes",
            "version": "1.2.0",
            "packages": [
                {
                    "registryType": "pypi",
                    "identifier": "acme-notes",
                    "version": "1.2.0",
                    "transport": {"type": "stdio"},
                    "environmentVariables": [{"name": "NOTES_TOKEN", "isRequired": True}],
                }
            ],
        },
        {"name": "io.github.acme/broken", "packages": [{"registryType": "mcpb", "identifier": "x"}]},
    ]
    result = stub.ImportCatalog(pb.ImportCatalogRequest(content=json.dumps(doc).encode(), source="acme.json"))
    assert (result.format, result.imported, list(result.names)) == ("server.json", 1, ["io.github.acme-notes"])
    assert len(result.skipped) == 1
    assert result.skipped[0].startswith("io.github.acme/broken: ")
    entry = stub.GetCatalogEntry(pb.GetCatalogEntryRequest(name="io.github.acme-notes"))
    assert (entry.launch.command, list(entry.launch.args)) == ("uvx", ["acme-notes==1.2.0"])
    server = stub.InstallServer(
        pb.InstallServerRequest(catalog_name="io.github.acme-notes", name="notes", env={"NOTES_TOKEN": "t"})
    )
    assert server.catalog_name == "io.github.acme-notes"


def test_import_errors(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    error = rpc_error(
        stub.ImportCatalog, pb.ImportCatalogRequest(content=b"{oops", source="bad.json"), Code.INVALID_ARGUMENT
    )
    assert "catalog file 'bad.json' is not valid JSON" in error.details()
    error = rpc_error(stub.ImportCatalog, pb.ImportCatalogRequest(content=b"{}", format="csv"), Code.INVALID_ARGUMENT)
    assert "unknown catalog format 'csv'" in error.details()
