"""`jarvis up`'s banner points clients at the default surface, and says how to get a token where one is needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from jarvis.cli.banner import banner, invocation

SURFACES = [("discovery", "/mcp"), ("jarvis", "/mcp/jarvis")]


def test_an_open_loopback_jarvis_needs_no_token_and_points_at_the_default_surface() -> None:
    lines = banner("/d", "http://127.0.0.1:8765", SURFACES, auth_required=False)
    text = "\n".join(lines)
    assert "claude mcp add --transport http jarvis http://127.0.0.1:8765/mcp\n" in text + "\n"
    assert "token" not in text.split("Connect a client")[1]
    assert "  MCP jarvis       http://127.0.0.1:8765/mcp/jarvis" in lines
    assert "  Any client:   jarvis client edit <client> --add discovery" in text


def test_a_jarvis_that_requires_tokens_prints_lines_that_work_with_one() -> None:
    text = "\n".join(banner("/d", "http://127.0.0.1:8765", SURFACES, auth_required=True))
    assert "auth: token required" in text
    assert "jarvis token create" in text
    assert '--header "Authorization: Bearer $JARVIS_TOKEN"' in text
    assert '"headers": {"Authorization": "Bearer <the secret>"}' in text


def test_with_sign_in_the_banner_says_where_people_log_in() -> None:
    issuer = "https://id.example.com/realms/team"
    text = "\n".join(banner("/d", "http://127.0.0.1:8765", SURFACES, auth_required=True, sign_in=issuer))
    assert f"People sign in at {issuer}" in text
    assert "claude mcp add --transport http jarvis http://127.0.0.1:8765/mcp   (then /mcp" in text
    assert "Or with a token (machines, scripts):" in text
    assert "jarvis token create" in text
    # `jarvis client edit` writes entries without a token for a client that signs in (issue 48 item 4).
    assert "windsurf, …)   (a token of its own where the client cannot sign in)" in text


def test_the_hints_name_the_command_that_runs_this_jarvis() -> None:
    """Issue 46: a venv's `jarvis` is rarely on PATH; the hints print the one that runs, with the data dir."""
    command = "/opt/jarvis/.venv/bin/jarvis --data-dir /srv/jarvis"
    text = "\n".join(banner("/srv/jarvis", "http://127.0.0.1:8765", SURFACES, auth_required=True, command=command))
    assert f"create one:  {command} token create --name me --scope jarvis" in text
    assert f"Any client:   {command} client edit <client> --add discovery" in text


def test_invocation_is_jarvis_on_path_else_the_venvs_own_by_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "jarvis").write_text("#!/bin/sh\n")
    (venv / "jarvis").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert invocation() == str(venv / "jarvis")
    assert invocation("/my data") == f"{venv / 'jarvis'} --data-dir '/my data'"
    monkeypatch.setenv("PATH", f"{venv}:/usr/bin")
    assert invocation() == "jarvis"
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python3"))
    assert invocation() == f"{tmp_path / 'elsewhere' / 'python3'} -m jarvis.cli"
