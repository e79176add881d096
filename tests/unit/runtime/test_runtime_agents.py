"""Agent presets' command lines, their event dialects, and how secrets are sealed (real SQLite, real Fernet)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from sqlalchemy import update

from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.common.fernet_keys import KeyMissing
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.agent_protocol import parse_line
from jarvis.runtime.domain.agents import launch, redact
from jarvis.runtime.domain.presets import PRESETS
from jarvis.runtime.domain.secrets import Secrets, load_key
from jarvis.runtime.storage.migrate import MIGRATIONS
from jarvis.runtime.storage.models import ProjectRow, SecretRow

BASE = {"HOME": "/tmp", "JARVIS_SESSION_ID": "s1"}


def test_one_shot_presets_carry_the_prompt_and_stdin_presets_do_not() -> None:
    codex = launch("codex", PRESETS["codex"].command, "codex-json", "", "fix it", BASE, {"OPENAI_API_KEY": "k" * 8})
    assert codex.argv[:3] == ["codex", "exec", "--json"]
    assert codex.argv[-1] == "fix it"
    assert "{prompt}" in codex.command  # what the session shows
    assert codex.stdin_prompt is False
    claude = launch("claude", PRESETS["claude"].command, "stream-json", "", "hi", BASE, {"ANTHROPIC_API_KEY": "k"})
    assert claude.stdin_prompt is True
    assert "hi" not in claude.argv
    assert claude.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    # A stored secret can never replace Jarvis's own variables.
    sneaky = launch("", ["fake-agent"], "stream-json", "", "", BASE, {"HOME": "/evil", "TOKEN": "abcdefgh"})
    assert sneaky.env["HOME"] == "/tmp"
    assert sneaky.redact == (b"abcdefgh",)
    with pytest.raises(FailedPrecondition, match="GEMINI_API_KEY"):
        launch("claude", [], "", "gemini", "hi", BASE, {"ANTHROPIC_API_KEY": "k"})


def test_dialects_map_each_clis_events() -> None:
    def parse(protocol: str, value: object) -> tuple[str, object]:
        return parse_line(protocol, "stdout", json.dumps(value).encode())

    assert parse("codex-json", {"type": "thread.started", "thread_id": "t"})[0] == "system"
    assert (
        parse("codex-json", {"type": "item.completed", "item": {"type": "agent_message", "text": "x"}})[0]
        == "assistant"
    )
    kind, payload = parse("codex-json", {"type": "turn.failed", "error": {"message": "quota"}})
    assert kind == "result"
    assert payload == {
        "subtype": "error",
        "is_error": True,
        "result": "quota",
        "event": {"type": "turn.failed", "error": {"message": "quota"}},
    }
    assert parse("gemini-json", {"type": "message", "role": "assistant", "content": "x"})[0] == "assistant"
    kind, payload = parse("gemini-json", {"type": "result", "status": "error", "error": {"message": "no"}})
    assert kind == "result"
    assert isinstance(payload, dict)
    assert payload["is_error"] is True
    assert parse("opencode-json", {"type": "text", "part": {"text": "x"}})[0] == "assistant"
    assert parse("stream-json", {"type": "result", "subtype": "success"})[0] == "result"
    assert parse_line("text", "stdout", b'{"type":"result"}') == ("text", {"text": '{"type":"result"}'})
    assert redact(b"key=abcdefgh!", (b"abcdefgh",)) == b"key=[secret]!"


def test_secrets_are_sealed_to_their_project_and_name(tmp_path: Path) -> None:
    db = MIGRATIONS.open_database(f"sqlite:///{tmp_path / 'runtime.db'}")
    try:
        with db.write() as session:
            for project_id in ("p000000000001", "p000000000002"):
                session.add(
                    ProjectRow(
                        id=project_id,
                        name=project_id,
                        source_url="",
                        image="i",
                        agent_command=["a"],
                        agent_protocol="text",
                        agent="",
                        network=False,
                        git=False,
                        container_id="",
                        created_at=utcnow(),
                    )
                )
        secrets = Secrets(db, load_key("", None, tmp_path))
        secrets.set("p000000000001", "API_KEY", "value-of-one")
        assert secrets.environment("p000000000001", {}) == {"API_KEY": "value-of-one"}
        assert b"value-of-one" not in (tmp_path / "runtime.db").read_bytes()
        # A row copied into another project's name does not open there.
        with db.read() as session:
            token = session.get(SecretRow, ("p000000000001", "API_KEY")).ciphertext  # type: ignore[union-attr]
        with db.write() as session:
            session.add(
                SecretRow(
                    project_id="p000000000002",
                    name="API_KEY",
                    ciphertext=token,
                    created_at=utcnow(),
                    updated_at=utcnow(),
                )
            )
        with pytest.raises(FailedPrecondition, match="sealed for another project"):
            secrets.environment("p000000000002", {})
        # Another key opens nothing, and says what to do.
        (tmp_path / "other").mkdir()
        with db.write() as session:
            session.execute(
                update(SecretRow)
                .where(SecretRow.project_id == "p000000000002")
                .values(ciphertext=Secrets(db, load_key("", None, tmp_path / "other"))._fernet.encrypt(b"x").decode())
            )
        with pytest.raises(FailedPrecondition, match="secret_set"):
            secrets.environment("p000000000002", {})
        with pytest.raises(InvalidArgument, match="reserved"):
            secrets.set("p000000000001", "JARVIS_TOKEN", "x")
    finally:
        db.close()


def test_the_key_is_required_deployed_and_created_owner_only_embedded(tmp_path: Path) -> None:
    with pytest.raises(KeyMissing, match="JARVIS_RUNTIME_SECRETS_KEY"):
        load_key("", None, None)
    with pytest.raises(KeyMissing, match="not a Fernet key"):
        load_key("short", None, None)
    created = load_key("", None, tmp_path)
    assert stat.S_IMODE((tmp_path / "secrets.key").stat().st_mode) == 0o600
    sealed = created.encrypt(b"x")
    assert load_key("", None, tmp_path).decrypt(sealed) == b"x"  # kept, never regenerated
    assert load_key("", tmp_path / "secrets.key", None).decrypt(sealed) == b"x"
