"""`<data_dir>/clients.json`: which config entries Jarvis wrote, and custom config paths."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jarvis.common.errors import FailedPrecondition

from .files import atomic_write

STATE_VERSION = 1
ManagedKind = Literal["server", "profile", "surface"]


@dataclass(frozen=True)
class ManagedEntry:
    """An entry Jarvis added: `ref` names the server, profile or surface (jarvis, discovery, …) it stands for."""

    kind: ManagedKind
    ref: str


@dataclass
class ClientState:
    """A custom config path (None: the default), and the entries Jarvis manages, per config file.

    Managed entries are keyed by file so that pointing a client at another file never makes a
    user's entry there look like one of Jarvis's.
    """

    config_path: str | None = None
    managed: dict[str, dict[str, ManagedEntry]] = field(default_factory=dict)

    def managed_in(self, path: Path) -> dict[str, ManagedEntry]:
        return dict(self.managed.get(str(path), {}))

    def set_managed(self, path: Path, entries: dict[str, ManagedEntry]) -> None:
        if entries:
            self.managed[str(path)] = dict(entries)
        else:
            self.managed.pop(str(path), None)

    def is_empty(self) -> bool:
        return self.config_path is None and not self.managed


class StateStore:
    """Loads and saves the whole file; callers hold the manager's lock around load-modify-save."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, ClientState]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            return _decode(json.loads(raw))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise FailedPrecondition(
                f"Jarvis client state {self.path} is unreadable ({exc}); fix it or move it away "
                "(Jarvis then forgets which client entries it manages and custom config paths)"
            ) from exc

    def save(self, states: dict[str, ClientState]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(self.path, json.dumps(_encode(states), indent=2) + "\n")


def _decode(data: Any) -> dict[str, ClientState]:
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise ValueError(f"expected an object with version {STATE_VERSION}")
    states: dict[str, ClientState] = {}
    for client, raw in data["clients"].items():
        path = raw.get("config_path")
        if path is not None and not isinstance(path, str):
            raise ValueError(f"config_path of {client} is not a string")
        managed: dict[str, dict[str, ManagedEntry]] = {}
        for file, entries in raw.get("managed", {}).items():
            for entry, record in entries.items():
                if record["kind"] not in ("server", "profile", "surface") or not isinstance(record["ref"], str):
                    raise ValueError(f"bad managed record {entry!r} of {client}")
                managed.setdefault(file, {})[entry] = ManagedEntry(record["kind"], record["ref"])
        states[client] = ClientState(path, managed)
    return states


def _encode(states: dict[str, ClientState]) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "clients": {
            client: {
                "config_path": state.config_path,
                "managed": {
                    file: {name: {"kind": m.kind, "ref": m.ref} for name, m in entries.items()}
                    for file, entries in sorted(state.managed.items())
                },
            }
            for client, state in sorted(states.items())
            if not state.is_empty()
        },
    }
