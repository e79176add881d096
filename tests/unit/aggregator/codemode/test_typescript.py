"""Declarations from JSON Schemas, and the typings answer made of them, checked by Deno's own TypeScript checker
(offline, no permissions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.aggregator.codemode.typescript import MAX_DOC, accessor, clipped
from jarvis.aggregator.codemode.typings import Typed, Untyped, typings
from tests.support.typecheck import deno_check

CONFIG = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["list", "get", "set"], "description": "what to do */ evil"},
        "key": {"type": "string", "description": "a setting's name"},
        "value": {"type": ["string", "number", "null"]},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"a-b": {"type": "integer"}}}},
        "extra": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "either": {"anyOf": [{"type": "string"}, {"const": 3}]},
    },
    "required": ["action"],
}
OUTPUT = {"type": "object", "properties": {"settings": {"type": "array", "items": {"type": "string"}}}}


def declared() -> str:
    return typings(
        "2 of 2 tools found",
        [
            Typed("jarvis_config", "Read and write settings", CONFIG, OUTPUT),
            Typed("time-now", "The time", {"type": "object"}),
        ],
    )


def test_a_declaration_reads_like_typescript() -> None:
    text = declared()
    assert text.startswith(
        "// 2 of 2 tools found\ndeclare const tools: {\n/** Read and write settings */\njarvis_config(args: {"
    )
    assert '  action: "list" | "get" | "set";' in text
    assert "  /** a setting's name */\n  key?: string;" in text
    assert '"a-b"?: number;' in text
    assert "evil" in text
    assert "*/ evil" not in text  # a description cannot close its comment early
    assert "Promise<{\n  settings?: Array<string>;\n}>;\n/** The time */\n" in text
    assert text.endswith('"time-now"(args?: Record<string, unknown>): Promise<unknown>;\n};\n')


@pytest.mark.parametrize(
    ("program", "ok"),
    [
        ('const r = await tools.jarvis_config({ action: "list" });\nconst s: string[] | undefined = r.settings;', True),
        ('await tools["time-now"]();\nawait tools.jarvis_config({ action: "get", either: 3, value: null });', True),
        ('await tools.jarvis_config({ action: "nope" });', False),
        ("await tools.jarvis_config({});", False),
    ],
)
def test_deno_checks_programs_against_the_declarations(tmp_path: Path, program: str, ok: bool) -> None:
    done = deno_check(tmp_path, declared(), program)
    assert (done.returncode == 0) is ok, done.stdout + done.stderr


GRAPH = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "relations": {"type": "array", "items": {"type": "object", "properties": {"from": {"type": "string"}}}},
    },
    "required": ["entities", "relations"],
}


def graph_typings() -> str:
    """Two tools of one server that answer with the same graph, and two catalog tools of a server not installed."""
    return typings(
        '2 of 4 tools found for "graph" can be called',
        [
            Typed("memory__open_nodes", "Open nodes by name", {"type": "object", "required": ["names"]}, GRAPH),
            Typed("memory__search_nodes", "Search nodes", SEARCH, GRAPH),
        ],
        [
            Untyped("kg__walk", "Walk the graph", "not installed: install kg"),
            Untyped("kg__*/", "x", "not installed: install kg"),
        ],
    )


SEARCH = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}


def test_a_type_the_tools_share_is_declared_once_and_uncallable_tools_are_grouped_by_why() -> None:
    text = graph_typings()
    assert text.startswith('// 2 of 4 tools found for "graph" can be called\ntype OpenNodesResult = {\n')
    assert text.count("entities: Array<") == 1  # the shared result, written out once
    assert "memory__open_nodes(args: Record<string, unknown>): Promise<OpenNodesResult>;" in text
    assert "}): Promise<OpenNodesResult>;\n};\n" in text  # search_nodes refers to it too, and the block closes
    assert text.count("not installed: install kg") == 1
    assert text.endswith("//   kg__walk: Walk the graph\n//   kg__*/: x\n")
    assert "declare const tools" not in typings("none callable", [], [Untyped("a__b", "c", "not installed")])
    # What a server says stays inside its comment line, whatever line breaks it holds (U+2028 ends a line in TS).
    sneaky = typings("h", [], [Untyped("a__b\nx = 1;", "c\u2028declare const y: 1;", "not\ninstalled")])
    assert all(line.startswith("//") for line in sneaky.splitlines())


@pytest.mark.parametrize(
    ("program", "ok"),
    [
        (
            "const g = await tools.memory__search_nodes({ query: 'x' });\n"
            "const n: string | undefined = g.entities[0].name;",
            True,
        ),
        ("const g: OpenNodesResult = await tools.memory__open_nodes({ names: ['a'] });", True),
        ("await tools.memory__search_nodes({});", False),
        ("await tools.kg__walk({});", False),  # not callable, so not declared
    ],
)
def test_deno_checks_programs_against_a_typings_answer(tmp_path: Path, program: str, ok: bool) -> None:
    done = deno_check(tmp_path, graph_typings(), program)
    assert (done.returncode == 0) is ok, done.stdout + done.stderr


def test_a_tool_is_reached_as_a_program_would_write_it() -> None:
    assert accessor("jarvis_config") == "tools.jarvis_config"
    assert accessor("everything__get-sum") == 'tools["everything__get-sum"]'  # tools.everything__get-sum is a minus


def test_a_long_description_is_cut_where_it_reads_as_whole() -> None:
    """The reference filesystem server's read_text_file description, 340 characters: its doc comment keeps the
    sentences that fit and drops the one that would be cut; with no sentence to end at, a word ends it, marked."""
    described = (
        "Read the complete contents of a file from the file system as text. Handles various text encodings and "
        "provides detailed error messages if the file cannot be read. Use this tool when you need to examine the "
        "contents of a single file. Use the 'head' parameter to read only the first N lines of a file, and the "
        "'tail' parameter to read only the last N lines of a file."
    )
    assert clipped(described) == described[: described.index(" Use the 'head'")]
    assert clipped("e.g. " + "word " * 80) == ("e.g. " + "word " * 59).rstrip() + "…"
    assert clipped("x" * 400) == "x" * (MAX_DOC - 1) + "…"
    assert clipped("short. Enough.") == "short. Enough."
    assert clipped("word " * 80).endswith("word…")
    assert f"/** {described[:40]}" in typings("1 tool", [Typed("files__read", described, {"type": "object"})])
