"""The debug gateway's sub-tools as discovery indexes them: their arguments keep the types the service declares."""

from __future__ import annotations

from pathlib import Path

from jarvis.aggregator.codemode.typings import Typed, typings
from jarvis.aggregator.discovery.sources import gateway_entries
from jarvis.debug.app import open_gateway
from jarvis.debug.settings import DebugSettings


def test_a_sub_tools_arguments_are_typed_in_its_declaration(tmp_path: Path) -> None:
    """Issue 46: every parameter of a debug sub-tool was declared `unknown` (`log_group` included)."""
    gateway = open_gateway(DebugSettings(credentials_file=tmp_path / "absent.env"))
    listing = [gateway.category_listing(c.name) for c in gateway.categories()]
    entries = {e.name: e for e in gateway_entries(listing)}
    streams = entries["debug__cloudwatch_list_log_streams"]
    assert streams.input_schema["properties"]["log_group"]["type"] == "string"
    assert "log_group" in streams.input_schema["required"]
    declared = typings("found", [Typed(streams.name, streams.description, streams.input_schema)])
    assert "log_group: string" in declared
    assert "log_group: unknown" not in declared
