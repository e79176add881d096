"""The command line's tables and catalog batches, and numbers in tool answers."""

from __future__ import annotations

import json
from typing import Any

from jarvis.aggregator.gateways.registry_convert import to_dict
from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.cli.output import BATCH, catalog_batches, table


def test_table_aligns_columns_and_shows_empty_cells_as_dashes() -> None:
    rows: list[dict[str, Any]] = [
        {"id": "a1", "name": "ci", "scopes": ["jarvis", "read"], "expires_at": None},
        {"id": "b22", "name": "alice-laptop", "scopes": [], "expires_at": "2027-01-01T00:00:00Z"},
    ]
    out = table(rows, (("id", "id"), ("name", "name"), ("scopes", "scopes"), ("expires_at", "expires")))
    assert out.splitlines() == [
        "ID   NAME          SCOPES       EXPIRES",
        "a1   ci            jarvis,read  -",
        "b22  alice-laptop  -            2027-01-01T00:00:00Z",
    ]


def test_a_big_catalog_is_cut_into_batches_keeping_its_envelope() -> None:
    servers = [{"name": f"s{i}"} for i in range(BATCH * 2 + 5)]
    native = {"format": "jarvis-catalog", "servers": servers}
    batches = catalog_batches(json.dumps(native).encode())
    assert batches is not None
    parts, total = batches
    assert total == len(servers)
    decoded = [json.loads(p) for p in parts]
    assert [len(d["servers"]) for d in decoded] == [BATCH, BATCH, 5]
    assert all(d["format"] == "jarvis-catalog" for d in decoded)
    assert [s for d in decoded for s in d["servers"]] == servers
    listed = catalog_batches(json.dumps(servers).encode())
    assert listed is not None
    assert [len(json.loads(p)) for p in listed[0]] == [BATCH, BATCH, 5]


def test_small_single_or_broken_files_go_in_one_call() -> None:
    assert catalog_batches(b'[{"name": "a"}]') is None
    assert catalog_batches(b'{"name": "io.github.x/y", "packages": []}') is None
    assert catalog_batches(b"{not json") is None


def test_counts_in_tool_answers_are_numbers_not_strings() -> None:
    usage = to_dict(pb.GetUsageResponse(stats=[pb.UsageStat(tool="jarvis_server", action="list", calls=3, errors=1)]))
    assert usage["stats"][0]["calls"] == 3
    assert usage["stats"][0]["errors"] == 1
    token = to_dict(pb.CreateTokenRequest(name="x", scopes=["read"], expires_in_seconds=60))
    assert token["expires_in_seconds"] == 60
