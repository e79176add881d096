"""The config file: typed get/set/list, atomic writes with a backup before each, and migrate."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jarvis.common.errors import FailedPrecondition, InvalidArgument
from jarvis.registry.domain.config.keys import KNOWN_KEYS, ConfigKey, known_key
from jarvis.registry.domain.config.migrate import CURRENT_VERSION, get_path, set_path, upgrade, version_of

KEEP_BACKUPS = 20  # enough to step back through a session of edits without filling the directory


@dataclass(frozen=True)
class ConfigValue:
    key: str
    value: Any
    description: str
    is_default: bool  # the file does not set the key


@dataclass(frozen=True)
class Migration:
    from_version: int
    to_version: int
    backup_path: str
    changes: list[str]


class ConfigFile:
    def __init__(self, path: Path, defaults: Mapping[str, Any] | None = None) -> None:
        """`defaults` replace the built-in default of some keys (aggregator_url: what this instance serves)."""
        self.path = path
        self._defaults = dict(defaults or {})
        self._lock = threading.Lock()  # serialises read-modify-write cycles within the process

    def exists(self) -> bool:
        return self.path.exists()

    def version(self) -> int:
        raw = self._read()
        return CURRENT_VERSION if raw is None else version_of(raw)

    def get(self, key: str) -> ConfigValue:
        return self._value(known_key(key), self._current())

    def value(self, key: str) -> Any:
        return self.get(key).value

    def list(self) -> list[ConfigValue]:
        doc = self._current()
        return [self._value(k, doc) for k in KNOWN_KEYS]

    def set(self, key: str, value: Any) -> ConfigValue:
        """Validate and store one value; a version-1 file is upgraded on the way."""
        spec = known_key(key)
        checked = spec.validate(value)
        with self._lock:
            doc = self._current()
            set_path(doc, spec.name, checked)
            self._write(doc)
        return self._value(spec, doc)

    def write_defaults_if_missing(self) -> bool:
        """Create a current-version file when there is none; True if one was written."""
        with self._lock:
            if self.path.exists():
                return False
            self._write({"version": CURRENT_VERSION})
            return True

    def migrate(self) -> Migration:
        with self._lock:
            raw = self._read()
            if raw is None:
                missing = f"no config file at {self.path}; nothing to migrate"
                return Migration(CURRENT_VERSION, CURRENT_VERSION, "", [missing])
            before = version_of(raw)
            if before == CURRENT_VERSION:
                return Migration(before, before, "", [f"config is already at version {CURRENT_VERSION}; nothing to do"])
            upgraded, changes = upgrade(raw)
            backup = self._write(upgraded)
            return Migration(before, CURRENT_VERSION, str(backup or ""), changes)

    def _value(self, spec: ConfigKey, doc: dict[str, Any]) -> ConfigValue:
        found, value = get_path(doc, spec.name)
        default = self._defaults.get(spec.name, spec.default)
        description = spec.description + (" Setting it needs the admin scope." if spec.admin_only else "")
        return ConfigValue(spec.name, value if found else default, description, not found)

    def _current(self) -> dict[str, Any]:
        """The document at the current version (upgraded in memory if the file is older)."""
        raw = self._read()
        return {"version": CURRENT_VERSION} if raw is None else upgrade(raw)[0]

    def _read(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FailedPrecondition(
                f"config file {self.path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                f"fix it or restore a backup ({self.path.name}.bak-*)"
            ) from exc
        if not isinstance(doc, dict):
            raise FailedPrecondition(f"config file {self.path} must hold a JSON object; fix it or restore a backup")
        return doc

    def _write(self, doc: dict[str, Any]) -> Path | None:
        """Replace the file atomically; the previous content is kept as a timestamped backup."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        backup = self._backup() if self.path.exists() else None
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(doc, handle, indent=2, sort_keys=False)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise FailedPrecondition(f"could not write config file {self.path}: {exc.strerror}") from exc
        _fsync_dir(self.path.parent)
        return backup

    def _backup(self) -> Path:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = self.path.with_name(f"{self.path.name}.bak-{stamp}")
        shutil.copy2(self.path, backup)
        backups = sorted(self.path.parent.glob(f"{self.path.name}.bak-*"))
        for old in backups[:-KEEP_BACKUPS]:
            old.unlink(missing_ok=True)
        return backup


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is on disk.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_value_json(key: str, value_json: str) -> Any:
    try:
        return json.loads(value_json)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(
            f"value for '{key}' must be JSON ({exc.msg}): quote strings (\"INFO\"), write numbers (5) and "
            "booleans (true) bare"
        ) from exc
