"""Credentials read at call time, time arguments, Jira's document format, JSON Schema views."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.debug.app import build_backends
from jarvis.debug.backends.credentials import Credentials
from jarvis.debug.backends.jira import adf_text
from jarvis.debug.backends.times import parse_time
from jarvis.debug.domain.arguments import input_schema
from jarvis.debug.settings import DebugSettings


def test_credentials_file_is_read_on_every_call_and_environment_wins(tmp_path: Path) -> None:
    file = tmp_path / "debug.env"
    credentials = Credentials(file, environ={"JIRA_URL": "https://env.example"})
    with pytest.raises(FailedPrecondition) as caught:
        credentials.require(["JIRA_URL", "JIRA_EMAIL", "JIRA_API_TOKEN"], "Jira")
    assert str(caught.value).startswith(
        f"Jira is not configured: set JIRA_EMAIL, JIRA_API_TOKEN in the environment "
        f"of the debug service or {file} (read on every call; no restart needed)."
    )
    file.write_text('JIRA_URL=https://file.example\nJIRA_EMAIL=a@example.com\nJIRA_API_TOKEN="t0ken"\n')
    assert credentials.require(["JIRA_URL", "JIRA_EMAIL", "JIRA_API_TOKEN"], "Jira") == {
        "JIRA_URL": "https://env.example",
        "JIRA_EMAIL": "a@example.com",
        "JIRA_API_TOKEN": "t0ken",
    }


def test_missing_credentials_never_echo_values() -> None:
    credentials = Credentials(None, environ={"JIRA_API_TOKEN": "s3cret-value"})
    with pytest.raises(FailedPrecondition) as caught:
        credentials.require(["JIRA_URL", "JIRA_API_TOKEN"], "Jira")
    assert "s3cret-value" not in str(caught.value)
    assert "set JIRA_URL in the environment of the debug service." in str(caught.value)


NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW),
        ("30m", datetime(2026, 11, 22, 11, 30, tzinfo=UTC)),
        ("-2h", datetime(2026, 11, 22, 10, 0, tzinfo=UTC)),
        ("7d", datetime(2026, 11, 15, 12, 0, tzinfo=UTC)),
        ("2026-11-01T08:00:00Z", datetime(2026, 11, 1, 8, 0, tzinfo=UTC)),
        ("2026-11-01T08:00:00", datetime(2026, 11, 1, 8, 0, tzinfo=UTC)),
        ("1795000000", datetime.fromtimestamp(1795000000, UTC)),
        ("1795000000000", datetime.fromtimestamp(1795000000, UTC)),
    ],
)
def test_time_arguments(text: str, expected: datetime) -> None:
    assert parse_time(text, "start", now=NOW) == expected


def test_unreadable_time_names_the_argument_and_formats() -> None:
    with pytest.raises(InvalidArgument, match=r"argument 'start': cannot read 'yesterday' as a time; use relative"):
        parse_time("yesterday", "start")


def test_jira_document_format_becomes_text() -> None:
    doc = {
        "type": "doc",
        "version": 1,
        "content": [
            {"type": "heading", "attrs": {"level": 2}, "content": [{"type": "text", "text": "Steps"}]},
            {
                "type": "bulletList",
                "content": [
                    {
                        "type": "listItem",
                        "content": [{"type": "paragraph", "content": [{"type": "text", "text": "pay"}]}],
                    },
                    {
                        "type": "listItem",
                        "content": [
                            {
                                "type": "paragraph",
                                "content": [
                                    {"type": "text", "text": "ask "},
                                    {"type": "mention", "attrs": {"text": "@ada"}},
                                ],
                            }
                        ],
                    },
                ],
            },
            {
                "type": "paragraph",
                "content": [{"type": "text", "text": "a"}, {"type": "hardBreak"}, {"type": "text", "text": "b"}],
            },
        ],
    }
    assert adf_text(doc) == "Steps\n- pay\n- ask @ada\na\nb\n"
    assert adf_text(None) == ""
    assert adf_text("plain") == "plain"


def test_every_built_in_tool_has_a_valid_json_schema_and_a_category_prefix() -> None:
    saas = {"cloudwatch", "stepfunctions", "langsmith", "jira"}
    names = set()
    for backend in build_backends(DebugSettings()):
        assert backend.description
        assert len(backend.description) <= 100
        for spec in backend.tools():
            assert spec.name.startswith(backend.category + "_"), spec.name
            schema = input_schema(spec)
            jsonschema.Draft202012Validator.check_schema(schema)
            assert set(schema.get("required", [])) == {p.name for p in spec.params if p.required}
            if backend.category in saas:
                names.add(spec.name)
    assert len(names) == 17  # debug-mcp's 17 tools, renamed by category
