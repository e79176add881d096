"""Config file: typed get/set/list, atomic writes with backups, version-1 migration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.registry.domain.config.keys import KNOWN_KEYS
from jarvis.registry.domain.config.store import ConfigFile, parse_value_json

V1 = {"aggregatorUrl": "http://10.0.0.5:9000", "defaultProfile": "work", "logLevel": "debug", "theme": "dark"}


@pytest.fixture
def config(tmp_path: Path) -> ConfigFile:
    return ConfigFile(tmp_path / "config.json")


def backups(config: ConfigFile) -> list[Path]:
    return sorted(config.path.parent.glob("config.json.bak-*"))


def test_aggregator_url_defaults_to_the_served_url_until_an_admin_sets_one(tmp_path: Path) -> None:
    served = ConfigFile(tmp_path / "config.json", {"aggregator_url": "http://127.0.0.1:18765"})
    value = served.get("aggregator_url")
    assert (value.value, value.is_default) == ("http://127.0.0.1:18765", True)
    served.set("aggregator_url", "https://jarvis.team.example")
    assert served.value("aggregator_url") == "https://jarvis.team.example"
    assert (
        ConfigFile(tmp_path / "config.json", {"aggregator_url": "http://x:1"}).value("aggregator_url")
        == "https://jarvis.team.example"
    )


def test_defaults_without_a_file(config: ConfigFile) -> None:
    values = {v.key: v for v in config.list()}
    assert set(values) >= {
        "aggregator_url",
        "default_profile",
        "share.default_expiry_seconds",
        "discovery.default_limit",
        "usage.enabled",
        "servers.idle_stop_seconds",
        "log_level",
    }
    assert values["aggregator_url"].value == "http://127.0.0.1:8765"
    assert all(v.is_default and v.description for v in values.values())
    assert not config.exists()


def test_set_writes_nested_v2_and_reads_back(config: ConfigFile) -> None:
    entry = config.set("discovery.default_limit", 8)
    assert (entry.value, entry.is_default) == (8, False)
    config.set("usage.enabled", False)
    doc = json.loads(config.path.read_text())
    assert doc == {"version": 2, "discovery": {"default_limit": 8}, "usage": {"enabled": False}}
    assert config.get("discovery.default_limit").value == 8
    assert config.get("log_level").is_default


def test_every_write_after_the_first_keeps_a_backup(config: ConfigFile) -> None:
    config.set("log_level", "DEBUG")
    assert backups(config) == []  # nothing to back up yet
    config.set("log_level", "ERROR")
    [backup] = backups(config)
    assert json.loads(backup.read_text())["log_level"] == "DEBUG"
    assert not list(config.path.parent.glob(".config.json.*.tmp"))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("discovery.default_limit", "5", "takes an integer from 1 to 50"),
        ("discovery.default_limit", 0, "takes an integer from 1 to 50"),
        ("usage.enabled", 1, "takes true or false"),
        ("log_level", "LOUD", "one of DEBUG, INFO, WARNING, ERROR"),
        ("aggregator_url", "ftp://x", "an http(s) URL"),
        ("default_profile", "Bad Name", "a profile name"),
    ],
)
def test_set_validates_the_type(config: ConfigFile, key: str, value: object, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        config.set(key, value)
    assert not config.exists()


def test_unknown_key_lists_known_keys(config: ConfigFile) -> None:
    with pytest.raises(InvalidArgument) as exc:
        config.set("colour", "blue")
    assert "unknown config key 'colour'" in exc.value.message
    assert all(k.name in exc.value.message for k in KNOWN_KEYS)
    with pytest.raises(InvalidArgument, match="known keys"):
        config.get("colour")


def test_value_json_must_be_json() -> None:
    assert parse_value_json("log_level", '"INFO"') == "INFO"
    with pytest.raises(InvalidArgument, match="must be JSON"):
        parse_value_json("log_level", "INFO")


def test_migrate_v1_with_backup_and_report(config: ConfigFile) -> None:
    config.path.write_text(json.dumps(V1))
    result = config.migrate()
    assert (result.from_version, result.to_version) == (1, 2)
    assert Path(result.backup_path).exists()
    assert json.loads(Path(result.backup_path).read_text()) == V1
    assert "renamed 'aggregatorUrl' to 'aggregator_url'" in result.changes
    assert "kept unknown key 'theme' unchanged" in result.changes
    doc = json.loads(config.path.read_text())
    assert doc == {
        "version": 2,
        "aggregator_url": "http://10.0.0.5:9000",
        "default_profile": "work",
        "log_level": "DEBUG",
        "theme": "dark",
    }


def test_migrate_current_file_does_nothing(config: ConfigFile) -> None:
    config.set("log_level", "INFO")
    result = config.migrate()
    assert (result.from_version, result.to_version, result.backup_path) == (2, 2, "")
    assert "already at version 2" in result.changes[0]
    assert backups(config) == []


def test_migrate_drops_invalid_v1_values(config: ConfigFile) -> None:
    config.path.write_text(json.dumps({"discoveryDefaultLimit": "many"}))
    result = config.migrate()
    assert any(c.startswith("dropped 'discoveryDefaultLimit'") for c in result.changes)
    assert config.get("discovery.default_limit").is_default


def test_v1_file_reads_through_without_writing(config: ConfigFile) -> None:
    config.path.write_text(json.dumps(V1))
    assert config.get("default_profile").value == "work"
    assert config.version() == 1
    assert json.loads(config.path.read_text()) == V1


def test_broken_file_is_a_failed_precondition(config: ConfigFile) -> None:
    config.path.write_text("{not json")
    with pytest.raises(FailedPrecondition, match="not valid JSON"):
        config.list()
    config.path.write_text(json.dumps({"version": 9}))
    with pytest.raises(FailedPrecondition, match="newer than this Jarvis understands"):
        config.list()


def test_keys_the_aggregator_gates_behind_admin_exist() -> None:
    """The gate matches by name: a renamed key must not slip out of it."""
    from jarvis.common.scopes import ADMIN_CONFIG_KEYS
    from jarvis.registry.domain.config.keys import KEYS_BY_NAME

    assert ADMIN_CONFIG_KEYS
    assert KEYS_BY_NAME.keys() >= ADMIN_CONFIG_KEYS
    assert all(KEYS_BY_NAME[k].admin_only for k in ADMIN_CONFIG_KEYS)
    assert not any(k.admin_only for k in KEYS_BY_NAME.values() if k.name not in ADMIN_CONFIG_KEYS)


# Every key, decided: the settings a non-admin may change, each for a reason. A new key must be placed in
# ADMIN_CONFIG_KEYS or here, so it cannot become a surface-scope setting by accident.
OPEN_TO_THE_SURFACE_SCOPE = {
    "default_profile": "which profile a client naming none gets; a `jarvis` token edits profiles anyway",
    "discovery.default_limit": "how many results tool_find shows; a result count, not a limit on anyone",
    "servers.idle_stop_seconds": "when idle servers stop; no access, no record changes",
    "servers.autostart_profiles": "which profiles' servers start early; the same servers, started sooner",
    "servers.unprefixed_profiles": "tool names without prefixes; the same tools under other names",
}
# Names that mark a setting of security, the audit trail, limits, egress or what other clients connect to.
SENSITIVE = (
    "audit",
    "retention",
    "expir",
    "share",
    "interactive",
    "auth",
    "token",
    "secret",
    "rate",
    "limits.",
    "quota",
    "egress",
    "allow",
    "proxy",
    "network",
    "internal",
    "usage",
    "log",
    "url",
    "metrics",
)


def test_every_key_is_decided_admin_or_open() -> None:
    from jarvis.common.scopes import ADMIN_CONFIG_KEYS
    from jarvis.registry.domain.config.keys import KEYS_BY_NAME

    assert not ADMIN_CONFIG_KEYS & OPEN_TO_THE_SURFACE_SCOPE.keys()
    assert ADMIN_CONFIG_KEYS | OPEN_TO_THE_SURFACE_SCOPE.keys() == KEYS_BY_NAME.keys(), "decide each new key"


def test_the_admin_list_covers_the_known_sensitive_settings() -> None:
    from jarvis.common.scopes import ADMIN_CONFIG_KEYS

    # The attack of issue 34 item 5, and the key of issue 15.
    assert {"audit.retention_days", "share.default_expiry_seconds", "servers.interactive", "aggregator_url"} <= (
        ADMIN_CONFIG_KEYS
    )
    sensitive = {k.name for k in KNOWN_KEYS if any(word in k.name.lower() for word in SENSITIVE)}
    assert sensitive <= ADMIN_CONFIG_KEYS, sorted(sensitive - ADMIN_CONFIG_KEYS)
