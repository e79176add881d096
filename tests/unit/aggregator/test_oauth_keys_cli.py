"""`jarvis oauth-keys list|rotate|prune` on a keys directory (issue 31 item 1)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from jarvis.aggregator.settings import AggregatorSettings
from jarvis.cli.embedded import EmbeddedSettings
from jarvis.cli.main import cli


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("JARVIS_OAUTH_KEYS_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("JARVIS_OAUTH_ACCESS_TOKEN_TTL_SECONDS", "300")
    return CliRunner()


def test_rotate_then_prune(runner: CliRunner, tmp_path: Path) -> None:
    first = json.loads(runner.invoke(cli, ["oauth-keys", "list"]).output)["keys"]
    assert len(first) == 1
    assert first[0]["signs"]
    for path in (tmp_path / "keys").glob("*.pem"):
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    new_kid = runner.invoke(cli, ["oauth-keys", "rotate"]).output.strip()
    listed = json.loads(runner.invoke(cli, ["oauth-keys", "list"]).output)["keys"]
    assert [k["kid"] for k in listed] == [first[0]["kid"], new_kid]
    assert [k["signs"] for k in listed] == [False, True]
    too_soon = runner.invoke(cli, ["oauth-keys", "prune", "--older-than", "60"])
    assert too_soon.exit_code != 0
    assert "at least 300" in too_soon.output
    assert runner.invoke(cli, ["oauth-keys", "prune", "--older-than", "600"]).output.split() == [first[0]["kid"]]
    assert [k["kid"] for k in json.loads(runner.invoke(cli, ["oauth-keys", "list"]).output)["keys"]] == [new_kid]


def test_keys_default_to_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without JARVIS_OAUTH_KEYS_DIR the keys are the data dir's (`jarvis up --data-dir D` signs with D/oauth-keys),
    and `jarvis --data-dir D oauth-keys` manages those same keys; the variable wins where it is set."""
    monkeypatch.delenv("JARVIS_OAUTH_KEYS_DIR", raising=False)
    data = tmp_path / "data"
    assert EmbeddedSettings(data_dir=data).aggregator_settings("127.0.0.1:1").signing_keys_dir == data / "oauth-keys"
    listed = json.loads(CliRunner().invoke(cli, ["--data-dir", str(data), "oauth-keys", "list"]).output)
    assert listed["directory"] == str(data / "oauth-keys")
    monkeypatch.setenv("JARVIS_OAUTH_KEYS_DIR", str(tmp_path / "shared"))
    assert EmbeddedSettings(data_dir=data).aggregator_settings("127.0.0.1:1").signing_keys_dir == tmp_path / "shared"
    listed = json.loads(CliRunner().invoke(cli, ["--data-dir", str(data), "oauth-keys", "list"]).output)
    assert listed["directory"] == str(tmp_path / "shared")


def test_the_access_token_lifetime_stays_short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JARVIS_OAUTH_ACCESS_TOKEN_TTL_SECONDS", raising=False)
    assert AggregatorSettings().oauth_access_token_ttl_seconds == 300
    monkeypatch.setenv("JARVIS_OAUTH_ACCESS_TOKEN_TTL_SECONDS", "86400")
    with pytest.raises(ValidationError):
        AggregatorSettings()
