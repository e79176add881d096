"""JSON/JSONC parsing with positions, and the minimal text edits used on client configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.registry.domain.clients import jsonc

SAMPLES = Path(__file__).parent / "samples"
ENTRY = {"type": "http", "url": "http://127.0.0.1:8765/mcp/profile/dev"}


def value(text: str, *, lenient: bool = True) -> object:
    return jsonc.parse(text, jsonc=lenient).root.value


def test_parses_like_json_module() -> None:
    text = (SAMPLES / "claude.json").read_text()
    assert value(text, lenient=False) == json.loads(text)
    assert list(value(text, lenient=False)) == list(json.loads(text))  # type: ignore[call-overload]


def test_jsonc_comments_and_trailing_commas() -> None:
    parsed = value((SAMPLES / "vscode_mcp.json").read_text())
    assert isinstance(parsed, dict)
    assert list(parsed["servers"]) == ["perplexity", "fetch", "github"]
    assert parsed["inputs"][0]["id"] == "perplexity-key"
    assert parsed["servers"]["fetch"]["args"] == ["mcp-server-fetch"]
    assert value('{"a": "// not a comment", "b": "/* nor this */"}') == {
        "a": "// not a comment",
        "b": "/* nor this */",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1 // note\n}', "comments are not allowed"),
        ('{"a": 1,}', "trailing commas are not allowed"),
        ("[1, 2,]", "trailing commas are not allowed"),
        ('{"a": 1', "unexpected end"),
        ('{"a": 1 "b": 2}', "expected ',' or '}'"),
        ('{"a": tru}', "unexpected character"),
        ('{"a": NaN}', "unexpected character"),
        ('{"a": 1} x', "unexpected character"),
        ('{"a": "unterminated}', "invalid or unterminated string"),
        ('{"a": 1}\n{"b": 2}', "unexpected content after the end"),
    ],
)
def test_strict_mode_rejects(text: str, message: str) -> None:
    with pytest.raises(jsonc.JsonSyntaxError, match=message):
        jsonc.parse(text, jsonc=False)


def test_error_reports_line_and_column() -> None:
    with pytest.raises(jsonc.JsonSyntaxError) as info:
        jsonc.parse('{\n  "a": 1,\n  "b": ?\n}', jsonc=False)
    assert (info.value.line, info.value.column) == (3, 8)
    assert "line 3, column 8" in str(info.value)


def test_unterminated_block_comment() -> None:
    with pytest.raises(jsonc.JsonSyntaxError, match="unterminated comment"):
        jsonc.parse('{"a": 1 /* oops }', jsonc=True)


def test_set_member_appends_with_file_indentation() -> None:
    text = '{\n    "servers": {\n        "a": {\n            "command": "x"\n        }\n    }\n}\n'
    out = jsonc.set_member(text, ("servers",), "jarvis-dev", ENTRY, jsonc=False)
    assert out == (
        '{\n    "servers": {\n        "a": {\n            "command": "x"\n        },\n'
        '        "jarvis-dev": {\n            "type": "http",\n'
        '            "url": "http://127.0.0.1:8765/mcp/profile/dev"\n        }\n    }\n}\n'
    )


def test_set_member_keeps_tabs_comments_and_trailing_commas() -> None:
    text = (SAMPLES / "vscode_mcp.json").read_text()
    out = jsonc.set_member(text, ("servers",), "jarvis-dev", ENTRY, jsonc=True)
    assert out.startswith(text[: text.index('"github"')])  # everything before the last entry is untouched
    assert "// pinned in uv's cache" in out
    assert "/* Perplexity needs the key above */" in out
    assert '\t\t"jarvis-dev": {\n\t\t\t"type": "http",' in out
    assert out.endswith('/profile/dev"\n\t\t},\n\t},\n}\n')  # trailing-comma style kept
    parsed = value(out)
    assert isinstance(parsed, dict)
    assert list(parsed["servers"]) == ["perplexity", "fetch", "github", "jarvis-dev"]


def test_set_member_after_line_comment_does_not_comment_out_the_entry() -> None:
    text = '{\n  "servers": {\n    "a": 1 // keep me\n  }\n}'
    out = jsonc.set_member(text, ("servers",), "b", 2, jsonc=True)
    assert out == '{\n  "servers": {\n    "a": 1, // keep me\n    "b": 2\n  }\n}'


def test_set_member_after_multiline_block_comment() -> None:
    text = '{\n  "servers": {\n    "a": 1 /* starts\n ends */\n  }\n}'
    out = jsonc.set_member(text, ("servers",), "b", 2, jsonc=True)
    assert value(out) == {"servers": {"a": 1, "b": 2}}
    assert "/* starts\n ends */" in out


def test_set_member_replaces_existing_value_in_place() -> None:
    text = '{\n  "mcpServers": {\n    "a": {"old": true},\n    "b": 2\n  },\n  "z": 0\n}'
    out = jsonc.set_member(text, ("mcpServers",), "a", {"new": 1}, jsonc=False)
    assert out == '{\n  "mcpServers": {\n    "a": {\n      "new": 1\n    },\n    "b": 2\n  },\n  "z": 0\n}'


def test_set_member_creates_missing_object_and_fills_empty_one() -> None:
    out = jsonc.set_member('{\n  "other": true\n}', ("mcpServers",), "a", 1, jsonc=False)
    assert out == '{\n  "other": true,\n  "mcpServers": {\n    "a": 1\n  }\n}'
    out = jsonc.set_member('{\n  "mcpServers": {}\n}', ("mcpServers",), "a", 1, jsonc=False)
    assert out == '{\n  "mcpServers": {\n    "a": 1\n  }\n}'
    assert value(jsonc.set_member("{}", ("mcpServers",), "a", 1, jsonc=False)) == {"mcpServers": {"a": 1}}


def test_set_member_inline_object_stays_inline() -> None:
    out = jsonc.set_member('{"mcpServers": {"a": 1}, "x": 2}', ("mcpServers",), "b", {"c": [1]}, jsonc=False)
    assert out == '{"mcpServers": {"a": 1, "b": {"c": [1]}}, "x": 2}'


def test_crlf_files_keep_crlf() -> None:
    text = '{\r\n  "mcpServers": {\r\n    "a": 1\r\n  }\r\n}\r\n'
    out = jsonc.set_member(text, ("mcpServers",), "b", {"c": 1}, jsonc=False)
    assert "\n" not in out.replace("\r\n", "")
    assert value(out, lenient=False) == {"mcpServers": {"a": 1, "b": {"c": 1}}}
    back = jsonc.remove_member(out, ("mcpServers",), "b", jsonc=False)
    assert back == text


def test_remove_member_own_lines_is_exact_inverse_of_add() -> None:
    text = (SAMPLES / "claude.json").read_text()
    added = jsonc.set_member(text, ("mcpServers",), "jarvis-dev", ENTRY, jsonc=False)
    assert jsonc.remove_member(added, ("mcpServers",), "jarvis-dev", jsonc=False) == text


def test_remove_last_member_drops_dangling_comma_in_strict_json() -> None:
    text = '{\n  "mcpServers": {\n    "a": 1,\n    "b": {\n      "c": 2\n    }\n  }\n}'
    out = jsonc.remove_member(text, ("mcpServers",), "b", jsonc=False)
    assert out == '{\n  "mcpServers": {\n    "a": 1\n  }\n}'


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('{"s": {"a": 1, "b": 2, "c": 3}}', "b", '{"s": {"a": 1, "c": 3}}'),
        ('{"s": {"a": 1, "b": 2, "c": 3}}', "a", '{"s": {"b": 2, "c": 3}}'),
        ('{"s": {"a": 1, "b": 2, "c": 3}}', "c", '{"s": {"a": 1, "b": 2}}'),
        ('{"s": {"a": 1}}', "a", '{"s": {}}'),
    ],
)
def test_remove_member_inline(text: str, key: str, expected: str) -> None:
    assert jsonc.remove_member(text, ("s",), key, jsonc=False) == expected


def test_remove_member_keeps_comments_of_neighbours() -> None:
    text = (SAMPLES / "vscode_mcp.json").read_text()
    out = jsonc.remove_member(text, ("servers",), "fetch", jsonc=True)
    assert "/* Perplexity needs the key above */" in out
    parsed = value(out)
    assert isinstance(parsed, dict)
    assert list(parsed["servers"]) == ["perplexity", "github"]


def test_remove_missing_member_is_key_error() -> None:
    with pytest.raises(KeyError):
        jsonc.remove_member('{"s": {"a": 1}}', ("s",), "b", jsonc=False)
    with pytest.raises(KeyError):
        jsonc.remove_member('{"x": 1}', ("s",), "a", jsonc=False)


@pytest.mark.parametrize("sample", ["claude.json", "cursor_mcp.json", "vscode_mcp.json", "windsurf_mcp_config.json"])
def test_every_member_can_be_removed_and_re_added(sample: str) -> None:
    text = (SAMPLES / sample).read_text()
    lenient = sample.startswith("vscode")
    key = "servers" if lenient else "mcpServers"
    original = value(text, lenient=lenient)
    assert isinstance(original, dict)
    for name, entry in original[key].items():
        removed = jsonc.remove_member(text, (key,), name, jsonc=lenient)
        parsed = value(removed, lenient=lenient)
        assert isinstance(parsed, dict)
        assert name not in parsed[key]
        assert {k: v for k, v in parsed.items() if k != key} == {k: v for k, v in original.items() if k != key}
        again = value(jsonc.set_member(removed, (key,), name, entry, jsonc=lenient), lenient=lenient)
        assert isinstance(again, dict)
        assert again[key][name] == entry


def test_indent_unit_detection() -> None:
    assert jsonc.indent_unit('{\n    "a": 1\n}') == "    "
    assert jsonc.indent_unit('{\n\t"a": 1\n}') == "\t"
    assert jsonc.indent_unit("{}") == "  "
