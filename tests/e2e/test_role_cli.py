"""`jarvis role set|list|delete` and `jarvis oauth-client add|list|delete` on a data dir (issue 31 item 2): roles
map identity-provider groups and users to Jarvis scopes, clients are registered ahead, and bad input is refused
saying what to give."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.stack import jarvis_cli


def test_roles_are_set_listed_and_deleted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = jarvis_cli(
        "role",
        "set",
        "developers",
        "--group",
        "dev",
        "--user",
        "carol@example.test",
        "--scope",
        "jarvis",
        data_dir=data,
    )
    assert "developers" in made.stdout
    jarvis_cli("role", "set", "operators", "--group", "ops", "--scope", "jarvis:jarvis_check_status", data_dir=data)
    listed = json.loads(jarvis_cli("role", "list", data_dir=data).stdout)
    assert [r["name"] for r in listed] == ["developers", "operators"]
    assert listed[0] == {"name": "developers", "groups": ["dev"], "users": ["carol@example.test"], "scopes": ["jarvis"]}
    jarvis_cli("role", "delete", "operators", data_dir=data)
    assert [r["name"] for r in json.loads(jarvis_cli("role", "list", data_dir=data).stdout)] == ["developers"]
    missing = jarvis_cli("role", "delete", "operators", data_dir=data, check=False)
    assert missing.returncode != 0
    assert "jarvis role list" in missing.stderr


def test_a_role_needs_a_group_or_user_and_valid_scopes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    nobody = jarvis_cli("role", "set", "empty", "--scope", "jarvis", data_dir=data, check=False)
    assert nobody.returncode != 0
    assert "--group" in nobody.stderr
    bad = jarvis_cli("role", "set", "weird", "--group", "dev", "--scope", "Not A Scope", data_dir=data, check=False)
    assert bad.returncode != 0
    assert "scope" in bad.stderr


def test_an_admin_registers_a_client_ahead(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = json.loads(
        jarvis_cli(
            "oauth-client",
            "add",
            "team bot",
            "--redirect-uri",
            "https://bot.example.test/cb",
            "--confidential",
            data_dir=data,
        ).stdout
    )
    assert made["client_secret"].startswith("jcs_")
    listed = json.loads(jarvis_cli("oauth-client", "list", data_dir=data).stdout)
    assert listed == [
        {
            "client_id": made["client_id"],
            "client_name": "team bot",
            "redirect_uris": ["https://bot.example.test/cb"],
            "token_endpoint_auth_method": "client_secret_basic",
        }
    ]
    bad = jarvis_cli(
        "oauth-client", "add", "x", "--redirect-uri", "http://bot.example.test/cb", data_dir=data, check=False
    )
    assert bad.returncode != 0
    assert "https" in bad.stderr
    jarvis_cli("oauth-client", "delete", made["client_id"], data_dir=data)
    assert json.loads(jarvis_cli("oauth-client", "list", data_dir=data).stdout) == []
