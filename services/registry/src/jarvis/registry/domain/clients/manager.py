"""ClientManager: list, edit and import the MCP server entries of known client applications."""

from __future__ import annotations

import builtins
import contextlib
import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jarvis.common.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound

from .config import ConfigUnreadable, LoadedConfig, load_config, render
from .detect import detected
from .entries import JarvisEntry, jarvis_launch, needs_credential
from .files import atomic_write, backup
from .formats import CLIENTS, CLIENTS_BY_NAME, Access, ClientFormat
from .models import (
    ClientStatus,
    ConfigEntry,
    EditResult,
    ImportResult,
    PathInfo,
    Refresh,
    ServerLaunch,
    SkippedEntry,
    name_problem,
    validate_launch,
)
from .paths import ConfigPathPolicy
from .state import ClientState, ManagedEntry, StateStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Target:
    """Where one client's config is, resolved against the injected home and the state file."""

    client: ClientFormat
    path: Path
    default: Path
    custom: bool


class ClientManager:
    """Reads and edits client config files; remembers in `<data_dir>/clients.json` what it wrote.

    Every write keeps unrelated content, backs the file up first and replaces it atomically.
    Calls are serialised by a lock in the process and, on POSIX, a lock file beside the state.
    """

    def __init__(
        self,
        data_dir: Path,
        home: Path,
        aggregator_url: str,
        platform: str = sys.platform,
        *,
        jarvis_command: str = "jarvis",
        jarvis_data_dir: str = "",
        search_path: str | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._state = StateStore(data_dir / "clients.json")
        self._home = home
        self._aggregator_url = aggregator_url.rstrip("/")
        self._platform = platform
        self._jarvis_command = jarvis_command
        self._jarvis_data_dir = jarvis_data_dir
        self._search_path = search_path  # the PATH clients' commands are looked for on (None: this process's)
        self._paths = ConfigPathPolicy(home, platform, protected=(data_dir,))
        self._lock = threading.RLock()

    # --- public API -----------------------------------------------------------------------------

    def list(self) -> builtins.list[ClientStatus]:
        with self._locked():
            states = self._state.load()
            return [self._status(client, states.get(client.name, ClientState())) for client in CLIENTS]

    def edit(
        self,
        name: str,
        add_servers: Sequence[ServerLaunch | str] = (),
        remove_servers: Sequence[str] = (),
        add_profiles: Sequence[str] = (),
        remove_profiles: Sequence[str] = (),
        add_surfaces: Sequence[str] = (),
        remove_surfaces: Sequence[str] = (),
        *,
        path: str | None = None,
        authorization: str = "",
    ) -> EditResult:
        """Change one client's config; `path` names another file of the client's format for this edit
        (a workspace's .vscode/mcp.json), checked by the one path policy; `authorization` is the
        Authorization header HTTP entries carry when the instance requires a token.

        A server given by name is reached through Jarvis, on its one-server profile of the same name
        (entries.py); a ServerLaunch is written as given."""
        client = self._client(name)
        if not (add_servers or remove_servers or add_profiles or remove_profiles or add_surfaces or remove_surfaces):
            raise InvalidArgument("nothing to change: give servers, profiles or surfaces to add or remove")
        access = Access(self._aggregator_url, self._jarvis_command, self._jarvis_data_dir, authorization)
        adds = self._planned_adds(client, add_servers, add_profiles, add_surfaces, access)
        removes: dict[str, str] = {}  # entry name -> how the caller named it
        gone = [JarvisEntry("server", s) for s in remove_servers] + [JarvisEntry("profile", p) for p in remove_profiles]
        for gone_entry in gone + [JarvisEntry("surface", s) for s in remove_surfaces]:
            gone_entry.validate()
            removes[gone_entry.entry_name] = gone_entry.label

        with self._locked():
            states = self._state.load()
            state = states.setdefault(client.name, ClientState())
            target = self._target(client, state) if path is None else self._explicit(client, path)
            loaded = self._load_for_change(target, "edit")
            managed = state.managed_in(target.path)
            for entry, label in removes.items():
                if entry not in loaded.servers:
                    present = ", ".join(loaded.servers) or "none"
                    raise NotFound(
                        f"{client.display_name} config {target.path} has no {label}; entries there: {present}"
                    )
                if entry not in managed:
                    raise FailedPrecondition(
                        f"entry {entry!r} in {target.path} was not added by Jarvis, so Jarvis will not "
                        "remove it; edit the file yourself if you want it gone"
                    )
            for entry, record, _ in adds:
                if entry in loaded.servers and entry not in managed:
                    raise AlreadyExists(
                        f"{target.path} already has its own entry {entry!r}, not added by Jarvis; "
                        "rename or remove it first, or use another name"
                    )
                held = managed.get(entry)
                if held is not None and held != record and entry in loaded.servers:
                    raise AlreadyExists(
                        f"entry {entry!r} in {target.path} already stands for {held.kind} {held.ref!r}; "
                        f"remove that first (remove=[{held.ref!r}]) to use the name for {record.kind} {record.ref!r}"
                    )
            backup_path = self._write(target, state, states, loaded, builtins.list(removes), adds)
        return EditResult(
            client=client.name,
            config_path=str(target.path),
            backup_path=backup_path,
            added=[entry for entry, _, _ in adds],
            removed=builtins.list(removes),
            notes=[client.note] if client.note and adds else [],
        )

    def import_servers(self, name: str) -> ImportResult:
        client = self._client(name)
        with self._locked():
            state = self._state.load().get(client.name, ClientState())
            target = self._target(client, state)
            loaded = self._load_for_change(target, "import from")
            managed = state.managed_in(target.path)
        if loaded.text is None:
            raise NotFound(f"{client.display_name} has no config file at {target.path}")
        servers: builtins.list[ServerLaunch] = []
        skipped: builtins.list[SkippedEntry] = []
        for entry, raw in loaded.servers.items():
            kind, _ = client.classify(raw, self._aggregator_url)
            problem = name_problem(entry)
            result: ServerLaunch | str
            if entry in managed:
                result = "the entry was added by Jarvis"
            elif kind != "server":
                result = "the entry points at Jarvis itself"
            elif problem is not None:
                result = f"the entry name {problem}"
            else:
                result = client.decode(entry, raw)
            if isinstance(result, str):
                skipped.append(SkippedEntry(entry, result))
            else:
                servers.append(result)
        return ImportResult(client.name, str(target.path), servers, skipped)

    def config_path(self, name: str, new_path: str | None = None) -> PathInfo:
        """The client's config path; with `new_path` set a custom one ("" goes back to the default)."""
        client = self._client(name)
        with self._locked():
            states = self._state.load()
            state = states.setdefault(client.name, ClientState())
            if new_path is not None:
                path = self._paths.parse_custom(client, new_path) if new_path else None
                default = self._paths.default(client)
                state.config_path = None if path is None or path == default else str(path)
                self._state.save(states)
            target = self._target(client, state)
        return PathInfo(
            client=client.name,
            path=str(target.path),
            default_path=str(target.default),
            custom=target.custom,
            exists=target.path.exists(),
        )

    def refreshes(self, sign_in: bool) -> builtins.list[Refresh]:
        """The entries Jarvis wrote that reach it with no credential, by client and file: what a Jarvis requiring one
        refuses (they were written while it ran open). With `sign_in` (Jarvis serves it) an HTTP entry of a client
        that signs in is not among them. A file gone or unreadable is left out (`jarvis client list` says why)."""
        with self._locked():
            states = self._state.load()
        found: builtins.list[Refresh] = []
        for client in CLIENTS:
            state = states.get(client.name)
            if state is None:
                continue
            current = self._target(client, state).path
            for file, managed in sorted(state.managed.items()):
                try:
                    servers = load_config(client, Path(file)).servers
                except ConfigUnreadable:
                    continue
                adds = [
                    JarvisEntry(record.kind, record.ref).added_as
                    for entry, record in managed.items()
                    if needs_credential(client, JarvisEntry(record.kind, record.ref), servers.get(entry), sign_in)
                ]
                if adds:
                    found.append(Refresh(client.name, file, adds, None if Path(file) == current else file))
        return found

    def remove_server_everywhere(self, server_name: str) -> builtins.list[str]:
        """Remove Jarvis's entries for an uninstalled server; returns the clients changed."""
        return self._remove_everywhere(ManagedEntry("server", server_name))

    def remove_profile_everywhere(self, profile_name: str) -> builtins.list[str]:
        """Remove Jarvis's entries for a deleted profile; returns the clients changed."""
        return self._remove_everywhere(ManagedEntry("profile", profile_name))

    # --- internals ------------------------------------------------------------------------------

    def _client(self, name: str) -> ClientFormat:
        client = CLIENTS_BY_NAME.get(name)
        if client is None:
            raise NotFound(f"unknown client {name!r}; known clients: {', '.join(CLIENTS_BY_NAME)}")
        return client

    def _target(self, client: ClientFormat, state: ClientState) -> _Target:
        default = self._paths.default(client)
        if state.config_path is None:
            return _Target(client, default, default, False)
        return _Target(client, Path(state.config_path), default, True)

    def _explicit(self, client: ClientFormat, raw: str) -> _Target:
        """A path given for one edit, confined by the same policy as a custom config path."""
        return self._file_target(client, self._paths.parse_custom(client, raw) if raw else self._paths.default(client))

    def _status(self, client: ClientFormat, state: ClientState) -> ClientStatus:
        target = self._target(client, state)
        exists = target.path.exists()
        entries: builtins.list[ConfigEntry] = []
        error = None
        try:
            loaded = load_config(client, target.path)
        except ConfigUnreadable as exc:
            error = str(exc)
        else:
            managed = state.managed_in(target.path)
            for entry, raw in loaded.servers.items():
                record = managed.get(entry)
                if record is not None:
                    profile = record.ref if record.kind == "profile" else None
                    kind = "jarvis" if record.kind == "surface" else record.kind
                    entries.append(ConfigEntry(entry, kind, True, profile))
                else:
                    kind, profile = client.classify(raw, self._aggregator_url)
                    entries.append(ConfigEntry(entry, kind, False, profile))
        return ClientStatus(
            name=client.name,
            display_name=client.display_name,
            config_path=str(target.path),
            detected=exists or detected(client, self._home, self._platform, self._search_path),
            config_exists=exists,
            custom_path=target.custom,
            entries=entries,
            error=error,
            http_entries=client.url_key is not None,
        )

    def _planned_adds(
        self,
        client: ClientFormat,
        servers: Sequence[ServerLaunch | str],
        profiles: Sequence[str],
        surfaces: Sequence[str],
        access: Access,
    ) -> builtins.list[tuple[str, ManagedEntry, dict[str, Any]]]:
        adds: builtins.list[tuple[str, ManagedEntry, dict[str, Any]]] = []
        wanted = [JarvisEntry("server", s) for s in servers if isinstance(s, str)]
        wanted += [JarvisEntry("profile", p) for p in profiles] + [JarvisEntry("surface", s) for s in surfaces]
        for server in servers:
            if not isinstance(server, str):
                validate_launch(server)
                adds.append((server.name, ManagedEntry("server", server.name), client.encode(server)))
        for entry in wanted:
            entry.validate()
            launch = jarvis_launch(client, entry, access)
            validate_launch(launch)
            adds.append((launch.name, ManagedEntry(entry.kind, entry.ref), client.encode(launch)))
        names = [entry for entry, _, _ in adds]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise InvalidArgument(f"entries added twice in one edit: {', '.join(duplicates)}")
        return adds

    def _load_for_change(self, target: _Target, verb: str) -> LoadedConfig:
        try:
            return load_config(target.client, target.path)
        except ConfigUnreadable as exc:
            raise FailedPrecondition(
                f"cannot {verb} {target.client.display_name}: {exc}; fix or move the file (Jarvis left it untouched)"
            ) from exc

    def _write(
        self,
        target: _Target,
        state: ClientState,
        states: dict[str, ClientState],
        loaded: LoadedConfig,
        removes: builtins.list[str],
        adds: builtins.list[tuple[str, ManagedEntry, dict[str, Any]]],
    ) -> str | None:
        """Apply the change; returns the backup's path (None when the file did not exist)."""
        client = target.client
        text = render(client, loaded, removes, [(entry, raw) for entry, _, raw in adds])
        path = self._paths.write_target(client, target.path, custom=target.custom)
        if loaded.text is None and not path.parent.is_dir():
            # A client found by its command or app location may not have made its folder yet: make it.
            if not (target.custom or detected(client, self._home, self._platform, self._search_path)):
                raise FailedPrecondition(
                    f"{client.display_name} does not seem to be installed (no {path.parent}, no command on PATH, "
                    "no app where its installer puts it); install it first, or name the file to write: path=<file> "
                    "(jarvis client edit ... --path <file>), or keep one with jarvis_client action=config"
                )
            path.parent.mkdir(parents=True, exist_ok=True)

        before = state.managed_in(target.path)
        final_names = [e for e in loaded.servers if e not in removes] + [e for e, _, _ in adds]
        after = {e: r for e, r in before.items() if e in final_names and e not in removes}
        after.update({entry: record for entry, record, _ in adds})
        # Record additions before writing: a crash between the two writes then leaves at worst a
        # record for an entry that is missing, never a Jarvis entry that Jarvis would not recognise.
        state.set_managed(target.path, {**before, **after})
        self._state.save(states)
        try:
            backup_path = backup(path) if loaded.text is not None else None
            atomic_write(path, text)
        except OSError as exc:
            state.set_managed(target.path, before)
            self._state.save(states)
            raise FailedPrecondition(f"cannot write {target.path}: {exc.strerror or exc}") from exc
        state.set_managed(target.path, after)
        self._state.save(states)
        log.info(
            "client config updated",
            extra={
                "client": client.name,
                "path": str(target.path),
                "added": [e for e, _, _ in adds],
                "removed": removes,
            },
        )
        return str(backup_path) if backup_path is not None else None

    def _remove_everywhere(self, wanted: ManagedEntry) -> builtins.list[str]:
        changed: builtins.list[str] = []
        with self._locked():
            states = self._state.load()
            for client in CLIENTS:
                state = states.get(client.name)
                if state is None:
                    continue
                for file in builtins.list(state.managed):
                    if self._remove_in(self._file_target(client, Path(file)), state, states, wanted):
                        changed.append(client.name)
        return sorted(set(changed))

    def _file_target(self, client: ClientFormat, path: Path) -> _Target:
        default = self._paths.default(client)
        return _Target(client, path, default, path != default)

    def _remove_in(
        self, target: _Target, state: ClientState, states: dict[str, ClientState], wanted: ManagedEntry
    ) -> bool:
        """Remove Jarvis's entries for `wanted` from one file; whether the file changed."""
        client = target.client
        managed = state.managed_in(target.path)
        entries = [entry for entry, record in managed.items() if record == wanted]
        if not entries:
            return False
        try:
            loaded = load_config(client, target.path)
        except ConfigUnreadable as exc:
            # One broken file must not stop the clean-up of the others; list() reports it.
            log.warning(
                "cannot remove entries from an unreadable client config",
                extra={"client": client.name, "entries": entries, "error": str(exc)},
            )
            return False
        present = [entry for entry in entries if entry in loaded.servers]
        if not present:  # the user already removed them: forget the records
            state.set_managed(target.path, {e: r for e, r in managed.items() if e not in entries})
            self._state.save(states)
            return False
        self._write(target, state, states, loaded, present, [])
        return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise changes between threads, and between processes sharing the data dir (POSIX)."""
        with self._lock:
            if sys.platform == "win32":
                yield
                return
            import fcntl

            self._data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(self._data_dir / "clients.lock", "a") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
