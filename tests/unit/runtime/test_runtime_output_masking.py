"""Secret values never reach a session's events, however the agent's JSON wrote them (issue 34, item 3).

Each dialect's real event lines go through the runtime's own reader (`LiveSessions`, over a fake process) into
the real event log (SQLite); the stored events are then read back as `session events` gives them. A secret with
`"`, `\\` and `-` in it is written as each agent's JSON encoder writes it: escaped (`\\"`, `\\\\`), and with JSON
unicode escapes (`\\u002d` for `-`), which no byte-wise match of the raw line finds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from jarvis.common.sql.database import Database
from jarvis.runtime.domain.agents import launch
from jarvis.runtime.domain.deps import Deps
from jarvis.runtime.domain.events import EventLog
from jarvis.runtime.domain.live import LiveSession, LiveSessions
from jarvis.runtime.domain.ports import AgentProcess
from jarvis.runtime.storage.migrate import MIGRATIONS

SECRET = 'sk-live"0123\\4567-abcd'  # a quote and a backslash: stream-json writes both escaped
PLAIN = "sk-ant-api03-0123456789"  # nothing JSON escapes, until an encoder writes `-` as \u002d


def escaped(secret: str) -> str:
    """The secret as a JSON encoder writes it inside a string."""
    return json.dumps(secret)[1:-1]


def unicode_escaped(secret: str) -> str:
    """As an encoder that escapes `-` (or an agent obfuscating it) writes it."""
    return escaped(secret).replace("-", "\\u002d")


class FakeProcess:
    """An agent process that has written `lines` (stdout, unless a line is given as ("stderr", line))."""

    pid = 1

    def __init__(self, lines: list[tuple[str, str]]) -> None:
        self._lines = [(stream, line.encode()) for stream, line in lines]

    def batches(self) -> Iterator[list[tuple[str, bytes]]]:
        yield from ([line] for line in self._lines)

    def exit_code(self) -> int | None:
        return 0

    def close(self) -> None:
        pass


def stored_events(
    tmp_path: Path, protocol: str, lines: list[tuple[str, str]], secrets: dict[str, str] | None = None
) -> list[tuple[str, Any]]:
    """(type, payload) of every event the runtime stored for a session whose agent wrote `lines`."""
    db = Database.from_url(f"sqlite:///{tmp_path / 'runtime.db'}")
    MIGRATIONS.upgrade_to_head(db.engine)
    events = EventLog(db, payload_max=100_000)
    settings = SimpleNamespace(session_output_max_bytes=1_000_000)
    deps = Deps(db=db, engine=cast(Any, None), git=cast(Any, None), events=events, settings=cast(Any, settings))
    # The values to mask, exactly as a spawn computes them from the project's secrets.
    how = launch("", ["agent"], protocol, "", "", {}, secrets or {"API_KEY": SECRET, "OTHER_KEY": PLAIN})
    live = LiveSession("s1", "p1", "c1", protocol, cast(AgentProcess, FakeProcess(lines)), redact=how.redact)
    LiveSessions(deps).start(live)
    assert live.done.wait(10)
    page, _ = events.page("s1", 0, 100, 0)
    return [(e.type, json.loads(e.payload_json)) for e in page]


def strings_in(value: Any) -> Iterator[str]:
    """Every string a reader of the event can decode from it: keys, values, and JSON text inside strings."""
    if isinstance(value, str):
        yield value
        try:
            inner = json.loads(value)
        except ValueError:
            return
        if not isinstance(inner, str):
            yield from strings_in(inner)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_in(item)


def assert_masked(stored: list[tuple[str, Any]], masked_at_least: int) -> None:
    raw = json.dumps([payload for _, payload in stored])
    for secret in (SECRET, PLAIN):
        for form in (secret, escaped(secret), unicode_escaped(secret)):
            assert form not in raw
        for text in strings_in([payload for _, payload in stored]):
            assert secret not in text, text
    assert sum("[secret]" in text for _, payload in stored for text in strings_in(payload)) >= masked_at_least


def kinds(stored: list[tuple[str, Any]]) -> list[str]:
    return [kind for kind, _ in stored if kind not in ("exit",)]


def test_stream_json_events_are_masked_after_decoding(tmp_path: Path) -> None:
    """Claude Code's stream-json: an assistant message quoting the key, a tool result with `env` output."""
    lines = [
        (
            "stdout",
            '{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":'
            f'[{{"type":"text","text":"The key is {escaped(SECRET)}"}}]}},"session_id":"x"}}',
        ),
        (
            "stdout",
            '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",'
            f'"content":"API_KEY={unicode_escaped(SECRET)}\\nOTHER_KEY={unicode_escaped(PLAIN)}"}}]}}}}',
        ),
        # A tool result that is itself JSON text: the secret is escaped twice.
        (
            "stdout",
            json.dumps({"type": "user", "content": json.dumps({"env": {"API_KEY": SECRET}})}),
        ),
        (
            "stdout",
            '{"type":"result","subtype":"success","is_error":false,'
            f'"result":"done with {unicode_escaped(PLAIN)}","session_id":"x"}}',
        ),
    ]
    stored = stored_events(tmp_path, "stream-json", lines)
    assert kinds(stored) == ["assistant", "user", "user", "result"]  # still the agent's events, not text
    assert_masked(stored, masked_at_least=4)
    assert stored[0][1]["message"]["content"][0]["text"] == "The key is [secret]"
    assert stored[3][1]["result"] == "done with [secret]"


def test_codex_json_events_are_masked_after_decoding(tmp_path: Path) -> None:
    lines = [
        ("stdout", '{"type":"thread.started","thread_id":"th_1"}'),
        (
            "stdout",
            '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc env",'
            f'"aggregated_output":"API_KEY={escaped(SECRET)}\\n","exit_code":0,"status":"completed"}}}}',
        ),
        (
            "stdout",
            '{"type":"item.completed","item":{"id":"item_2","type":"agent_message",'
            f'"text":"your key: {unicode_escaped(PLAIN)}"}}}}',
        ),
        ("stdout", f'{{"type":"turn.failed","error":{{"message":"401 for key {unicode_escaped(SECRET)}"}}}}'),
    ]
    stored = stored_events(tmp_path, "codex-json", lines)
    assert kinds(stored) == ["system", "tool_result", "assistant", "result"]
    assert_masked(stored, masked_at_least=3)
    failed = stored[3][1]
    assert failed["is_error"] is True
    assert failed["result"] == "401 for key [secret]"
    assert failed["event"]["error"]["message"] == "401 for key [secret]"


S_ESCAPED = PLAIN.replace("s", "\\u0073")


def test_gemini_json_events_are_masked_after_decoding(tmp_path: Path) -> None:
    lines = [
        ("stdout", '{"type":"init","session_id":"g1","model":"gemini-2.5-pro"}'),
        (
            "stdout",
            f'{{"type":"message","role":"assistant","content":"key {unicode_escaped(SECRET)}","delta":true}}',
        ),
        (
            "stdout",
            '{"type":"tool_result","tool_id":"t1","status":"success",'
            f'"output":"OTHER_KEY={S_ESCAPED}"}}',  # `s` written as \u0073
        ),
        ("stdout", f'{{"type":"result","status":"error","error":"bad key {escaped(SECRET)}"}}'),
    ]
    stored = stored_events(tmp_path, "gemini-json", lines)
    assert kinds(stored) == ["system", "assistant", "tool_result", "result"]
    assert_masked(stored, masked_at_least=3)
    assert stored[3][1]["result"] == "bad key [secret]"


def test_opencode_json_events_are_masked_after_decoding(tmp_path: Path) -> None:
    lines = [
        ("stdout", '{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}'),
        (
            "stdout",
            '{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","state":{"status":'
            f'"completed","input":{{"command":"env"}},"output":"API_KEY={unicode_escaped(SECRET)}"}}}}}}',
        ),
        (
            "stdout",
            f'{{"type":"text","sessionID":"ses_1","part":{{"type":"text","text":"it is {escaped(SECRET)}"}}}}',
        ),
        # The secret as an object key is masked too.
        ("stdout", f'{{"type":"step_finish","part":{{"{unicode_escaped(PLAIN)}":"seen"}}}}'),
    ]
    stored = stored_events(tmp_path, "opencode-json", lines)
    assert kinds(stored) == ["system", "tool_use", "assistant", "step_finish"]
    assert_masked(stored, masked_at_least=3)
    assert stored[3][1]["part"] == {"[secret]": "seen"}


def test_text_agent_lines_are_masked_with_their_escaped_forms(tmp_path: Path) -> None:
    """A text agent (aider) printing JSON it got from a tool, and a value JSON-escaped outside any quotes."""
    lines = [
        ("stdout", f'Tool said: {{"api_key": "{unicode_escaped(SECRET)}", "ok": true}}'),
        ("stdout", f"export OTHER_KEY={unicode_escaped(PLAIN)}"),
        ("stdout", f"raw {SECRET} and {PLAIN}"),
        ("stderr", f'warning: {{"token": "{escaped(SECRET)}"}}'),
    ]
    stored = stored_events(tmp_path, "text", lines)
    assert kinds(stored) == ["text", "text", "text", "stderr"]
    assert_masked(stored, masked_at_least=4)
    assert stored[0][1]["text"] == 'Tool said: {"api_key": "[secret]", "ok": true}'
    assert stored[2][1]["text"] == "raw [secret] and [secret]"


@pytest.mark.parametrize("protocol", ["stream-json", "codex-json", "gemini-json", "opencode-json"])
def test_a_secret_spanning_an_events_structure_is_masked_too(tmp_path: Path, protocol: str) -> None:
    """No single decoded value holds it: the line is kept as masked text, not as an event that would show it."""
    spanning = 'abcdef","b":"ghijkl'
    line = '{"type":"x","a":"abcdef","b":"ghijkl"}'
    stored = stored_events(tmp_path, protocol, [("stdout", line)], {"SPANNING": spanning})
    assert stored[0] == ("text", {"text": '{"type":"x","a":"[secret]"}'})
