"""Credentials, read when a tool is called: the process environment first, then a dotenv file.

Reading at call time (not at start) is what lets a user add a Jira token to the file and use the
Jira tools at once, without restarting Jarvis (spec 002: no restart or reconfiguration). Values
read here are never logged and never put in error messages; only their names are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from dotenv import dotenv_values

from jarvis.common.errors import FailedPrecondition


class Credentials:
    """Looks names up in `environ` (default: os.environ), then in `file` if it exists."""

    def __init__(self, file: Path | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.file = file
        self._environ = environ

    def _file_values(self) -> dict[str, str]:
        if self.file is None or not self.file.is_file():
            return {}
        return {k: v for k, v in dotenv_values(self.file).items() if v}

    def get(self, name: str) -> str:
        """The value of `name`, or "" when it is set nowhere."""
        environ = os.environ if self._environ is None else self._environ
        return environ.get(name) or self._file_values().get(name, "")

    def values(self, names: Sequence[str]) -> dict[str, str]:
        """Every name that is set, with its value (one read of the file)."""
        environ = os.environ if self._environ is None else self._environ
        from_file = self._file_values()
        found = {n: environ.get(n) or from_file.get(n, "") for n in names}
        return {n: v for n, v in found.items() if v}

    def where(self) -> str:
        """Where a user can put credentials, for error messages."""
        if self.file is None:
            return "the environment of the debug service"
        return f"the environment of the debug service or {self.file} (read on every call; no restart needed)"

    def require(self, names: Sequence[str], service: str, extra: str = "") -> dict[str, str]:
        """The values of `names`, or FailedPrecondition naming the missing ones and where to set them."""
        found = self.values(names)
        missing = [n for n in names if n not in found]
        if missing:
            tail = f" {extra}" if extra else ""
            raise FailedPrecondition(f"{service} is not configured: set {', '.join(missing)} in {self.where()}.{tail}")
        return found
