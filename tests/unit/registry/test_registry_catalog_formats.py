"""Catalog files: detection, the official server.json format, LiveMCPBench, the bundled catalog."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.catalog.formats import parse_catalog
from jarvis.registry.domain.records import CatalogEntry

LIVEMCPBENCH = Path("/work/shared/datasets/livemcpbench/tools.json")
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"

BRAVE = {
    "$schema": SCHEMA,
    "name": "io.github.modelcontextprotocol/brave-search",
    "description": "Web search through Brave",
    "version": "1.0.2",
    "packages": [
        {
            "registryType": "npm",
            "identifier": "@modelcontextprotocol/server-brave-search",
            "version": "1.0.2",
            "transport": {"type": "stdio"},
            "environmentVariables": [
                {"name": "BRAVE_API_KEY", "isRequired": True, "isSecret": True},
                {"name": "LOG", "default": "info"},
            ],
            "packageArguments": [{"type": "named", "name": "--mode", "value": "web"}],
        }
    ],
}
WEATHER_PYPI = {
    "$schema": SCHEMA,
    "name": "io.github.someone/weather",
    "version": "0.3.0",
    "packages": [
        {"registryType": "nuget", "identifier": "Weather", "version": "1", "transport": {"type": "stdio"}},
        {
            "registryType": "pypi",
            "identifier": "weather-mcp",
            "version": "0.3.0",
            "runtimeArguments": [{"type": "named", "name": "--python", "value": "3.12"}],
            "packageArguments": [{"type": "positional", "valueHint": "city", "isRequired": True}],
        },
    ],
}
REMOTE = {
    "$schema": SCHEMA,
    "name": "com.example/remote",
    "remotes": [
        {"type": "streamable-http", "url": "https://mcp.example.com/mcp", "headers": [{"name": "X-Team", "value": "a"}]}
    ],
}
OCI = {
    "name": "io.github.org/box",
    "packages": [
        {"registryType": "oci", "identifier": "ghcr.io/org/box", "version": "2.0.0", "transport": {"type": "stdio"}}
    ],
}


def parse(doc: object, fmt: str = "") -> tuple[dict[str, CatalogEntry], list[str], str]:
    parsed = parse_catalog(json.dumps(doc).encode(), "test.json", fmt)
    return {e.name: e for e in parsed.entries}, parsed.skipped, parsed.format


def test_server_json_npm_package() -> None:
    entries, skipped, fmt = parse(BRAVE)
    entry = entries["io.github.modelcontextprotocol-brave-search"]
    assert fmt == "server.json"
    assert skipped == []
    assert entry.launch.command == "npx"
    assert entry.launch.args == ("-y", "@modelcontextprotocol/server-brave-search@1.0.2", "--mode", "web")
    assert entry.launch.env == {"LOG": "info"}
    assert entry.required_env == ("BRAVE_API_KEY",)


def test_server_json_list_picks_first_launchable_package_and_remotes() -> None:
    entries, skipped, _ = parse([WEATHER_PYPI, REMOTE, OCI])
    assert skipped == []
    weather = entries["io.github.someone-weather"].launch
    assert (weather.command, weather.args) == ("uvx", ("--python", "3.12", "weather-mcp==0.3.0", "<city>"))
    remote = entries["com.example-remote"].launch
    assert (remote.transport, remote.url, remote.headers) == (
        "streamable-http",
        "https://mcp.example.com/mcp",
        {"X-Team": "a"},
    )
    box = entries["io.github.org-box"].launch
    assert (box.transport, box.image) == ("container", "ghcr.io/org/box:2.0.0")


def test_registry_api_envelope_is_unwrapped() -> None:
    entries, _, fmt = parse({"servers": [{"server": BRAVE, "_meta": {}}], "metadata": {"count": 1}})
    assert fmt == "server.json"
    assert list(entries) == ["io.github.modelcontextprotocol-brave-search"]


def test_server_json_problem_entries_are_skipped_with_reasons() -> None:
    metadata = {
        "$schema": SCHEMA,
        "name": "x/meta",
        "remotes": [{"type": "streamable-http", "url": "http://169.254.169.254/latest"}],
    }
    sse_only = {"$schema": SCHEMA, "name": "x/sse", "remotes": [{"type": "sse", "url": "https://a.example/sse"}]}
    entries, skipped, _ = parse([BRAVE, {"$schema": SCHEMA}, metadata, sse_only])
    assert list(entries) == ["io.github.modelcontextprotocol-brave-search"]
    assert skipped[0] == "#2: name is missing"
    assert skipped[1].startswith("x/meta: ")
    assert "link-local" in skipped[1]
    assert skipped[2].startswith("x/sse: nothing Jarvis can launch")
    assert "only streamable-http" in skipped[2]


def test_livemcpbench_real_file_imports_all_seventy() -> None:
    parsed = parse_catalog(LIVEMCPBENCH.read_bytes(), "tools.json")
    assert parsed.format == "livemcpbench"
    assert parsed.skipped == []
    assert len(parsed.entries) == 70
    by_name = {e.name: e for e in parsed.entries}
    git = by_name["git"]
    assert git.launch.command == "uvx"
    assert git.launch.args == ("mcp-server-git",)
    assert "git_commit" in [t.name for t in git.tools]
    assert git.category == "Code"
    assert git.tools[0].input_schema is not None
    assert "ant-design-components" in by_name  # a key with spaces becomes a valid name
    assert sum(len(e.tools) for e in parsed.entries) == 527


def test_livemcpbench_bad_items_are_skipped() -> None:
    good = {
        "name": "T",
        "config": {"mcpServers": {"t": {"command": "uvx", "args": ["t"]}}},
        "tools": {"t": {"tools": [{"name": "a", "description": "b"}]}},
    }
    no_command = {"name": "Broken", "config": {"mcpServers": {"b": {"args": []}}}}
    bad_tool = {"name": "BadTool", "config": {"mcpServers": {"c": {"command": "x"}}}, "tools": {"c": {"tools": [{}]}}}
    entries, skipped, fmt = parse([good, no_command, bad_tool, "junk"])
    assert fmt == "livemcpbench"
    assert list(entries) == ["t"]
    assert skipped == [
        "Broken: a stdio server needs a command (the executable to run, e.g. 'npx' or 'uvx')",
        "BadTool: tool #1 has no name",
        "#4: not a JSON object",
    ]


def test_bundled_catalog_is_complete() -> None:
    content = resources.files("jarvis.registry.domain.catalog").joinpath("bundled.json").read_bytes()
    parsed = parse_catalog(content, "bundled")
    names = {e.name for e in parsed.entries}
    assert parsed.format == "jarvis"
    assert parsed.skipped == []
    assert {
        "filesystem",
        "git",
        "fetch",
        "time",
        "memory",
        "sqlite",
        "postgres",
        "github",
        "everything",
        "sequential-thinking",
        "puppeteer",
        "brave-search",
        "slack",
        "gitlab",
        "sentry",
    } <= names
    assert all(e.description and e.category for e in parsed.entries)
    github = next(e for e in parsed.entries if e.name == "github")
    assert github.required_env == ("GITHUB_PERSONAL_ACCESS_TOKEN",)


@pytest.mark.parametrize(
    ("content", "fmt", "message"),
    [
        (b"{nope", "", "is not valid JSON: Expecting property name"),
        (b"\xff\xfe", "", "is not UTF-8"),
        (b'{"hello": 1}', "", "could not tell the format"),
        (b"[]", "livemcpbench", "does not have the shape of the livemcpbench format"),
        (b"{}", "yaml", "unknown catalog format 'yaml'"),
    ],
)
def test_unreadable_files_say_what_is_wrong(content: bytes, fmt: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_catalog(content, "f.json", fmt)
