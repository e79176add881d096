"""Installed servers: install from the catalog, create custom ones, edit, uninstall, read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from jarvis.common.errors import AlreadyExists, InvalidArgument, NotFound
from jarvis.registry.domain.catalog.store import find_entry
from jarvis.registry.domain.directories import note as directories_note
from jarvis.registry.domain.directories import served_directories
from jarvis.registry.domain.launch import validate_launch
from jarvis.registry.domain.names import validate_name
from jarvis.registry.domain.ports import ClientCascade
from jarvis.registry.domain.records import Launch, Server, Tool, TransportName
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import ServerRow

NOT_HOSTED = "not-hosted"


@dataclass(frozen=True)
class ServerEdit:
    """A partial update; None (or empty) leaves a field as it is. Args are appended unless replace_args."""

    name: str
    new_name: str | None = None
    description: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    replace_args: bool = False
    set_env: dict[str, str] = field(default_factory=dict)
    unset_env: tuple[str, ...] = ()
    url: str | None = None
    image: str | None = None
    cwd: str | None = None
    set_headers: dict[str, str] = field(default_factory=dict)
    unset_headers: tuple[str, ...] = ()

    @property
    def touches_launch(self) -> bool:
        return bool(
            self.args
            or self.replace_args
            or self.set_env
            or self.unset_env
            or self.set_headers
            or self.unset_headers
            or any(v is not None for v in (self.command, self.url, self.image, self.cwd))
        )


@dataclass(frozen=True)
class Uninstalled:
    name: str
    removed_from_profiles: list[str]
    removed_from_clients: list[str]


class Servers:
    def __init__(
        self,
        db: Database,
        clients: Callable[[], ClientCascade] | None = None,
        default_directories: Sequence[Path] = (),
    ) -> None:
        self._db = db
        self._clients = clients
        self._default_directories = tuple(default_directories)  # what an entry serving directories gets unasked

    def list(self) -> list[Server]:
        with self._db.read() as session:
            rows = session.scalars(select(ServerRow).options(selectinload(ServerRow.profiles)).order_by(ServerRow.name))
            return [server_from_row(r) for r in rows]

    def get(self, name: str) -> Server:
        with self._db.read() as session:
            return server_from_row(find_server(session, name))

    def install(
        self,
        catalog_name: str,
        name: str = "",
        env: dict[str, str] | None = None,
        directories: Sequence[str] = (),
    ) -> Server:
        """Install a catalog entry under `name` (default: the entry's name) with values for its env vars, and for
        an entry that serves directories, those `directories` (default: the project roots)."""
        env = dict(env or {})
        with self._db.write() as session:
            entry = find_entry(session, catalog_name)
            local = validate_name(name or entry.name, "server")
            missing = [v for v in entry.required_env if not env.get(v)]
            if missing:
                raise InvalidArgument(
                    f"'{entry.name}' needs environment variable(s) {', '.join(missing)}; pass their values in "
                    f'the install request\'s env map (e.g. env={{"{missing[0]}": "..."}})'
                )
            template = Launch.from_json(entry.launch)
            template, served = served_directories(entry.name, template, directories, self._default_directories)
            launch = validate_launch(replace(template, env={**template.env, **env}) if env else template)
            row = self._new_row(session, local, entry.description or entry.title, launch)
            row.catalog_name = entry.name
            row.tools = list(entry.tools)
            return replace(server_from_row(row), note=directories_note(served, bool(directories)))

    def create(self, name: str, description: str, launch: Launch) -> Server:
        with self._db.write() as session:
            row = self._new_row(session, validate_name(name, "server"), description, validate_launch(launch))
            return server_from_row(row)

    def edit(self, edit: ServerEdit) -> Server:
        if not edit.touches_launch and edit.new_name is None and edit.description is None:
            raise InvalidArgument(
                "nothing to change: set new_name, description, command, args, set_env, unset_env, url, image or cwd"
            )
        with self._db.write() as session:
            row = find_server(session, edit.name)
            if edit.touches_launch:
                _store_launch(row, validate_launch(_edited_launch(row, edit)))
            if edit.new_name is not None:
                new_name = validate_name(edit.new_name, "server")
                if new_name != row.name:
                    _ensure_free(session, new_name)
                    row.name = new_name
            if edit.description is not None:
                row.description = edit.description
            session.flush()
            return server_from_row(row)

    def uninstall(self, name: str) -> Uninstalled:
        """Delete the server, drop it from every profile and client config, all or nothing."""
        with self._db.write() as session:
            row = find_server(session, name)
            profiles = sorted(p.name for p in row.profiles)
            session.delete(row)
            session.flush()
            # Inside the transaction: if the client configs cannot be updated, the server stays.
            clients = self._clients().remove_server_everywhere(row.name) if self._clients else []
            return Uninstalled(row.name, profiles, sorted(clients))

    @staticmethod
    def _new_row(session: Session, name: str, description: str, launch: Launch) -> ServerRow:
        _ensure_free(session, name)
        row = ServerRow(name=name, description=description, status=NOT_HOSTED, last_error="", tools=[])
        _store_launch(row, launch)
        session.add(row)
        session.flush()
        return row


def _ensure_free(session: Session, name: str) -> None:
    if session.scalar(select(ServerRow.id).where(ServerRow.name == name)) is not None:
        raise AlreadyExists(
            f"server '{name}' already exists; choose another name, or change it with jarvis_server action=edit"
        )


def _edited_launch(row: ServerRow, edit: ServerEdit) -> Launch:
    launch = launch_of(row)
    args = tuple(edit.args) if edit.replace_args else (*launch.args, *edit.args)
    env = _merged(row.name, "environment variable", launch.env, edit.set_env, edit.unset_env)
    headers = _merged(row.name, "header", launch.headers, edit.set_headers, edit.unset_headers)
    return Launch(
        transport=launch.transport,
        command=launch.command if edit.command is None else edit.command,
        args=args,
        env=env,
        cwd=launch.cwd if edit.cwd is None else edit.cwd,
        url=launch.url if edit.url is None else edit.url,
        headers=headers,
        image=launch.image if edit.image is None else edit.image,
    )


def _merged(
    server: str, kind: str, current: Mapping[str, str], set_: Mapping[str, str], unset: Iterable[str]
) -> dict[str, str]:
    """`current` with `set_` set and `unset` removed: env and headers alike; a name both set and unset, or unset but
    not there, is the caller's mistake, named."""
    unset = tuple(unset)
    overlap = sorted(set(set_) & set(unset))
    if overlap:
        raise InvalidArgument(f"{kind}(s) {', '.join(overlap)} are both set and unset; pick one")
    unknown = sorted(set(unset) - set(current))
    if unknown:
        raise InvalidArgument(f"server '{server}' has no {kind}(s) {', '.join(unknown)} to unset")
    return {k: v for k, v in current.items() if k not in unset} | dict(set_)


def find_server(session: Session, name: str) -> ServerRow:
    row = session.scalar(select(ServerRow).where(ServerRow.name == name.strip().lower()))
    if row is None:
        raise NotFound(f"server '{name}' is not installed; jarvis_server action=list shows the installed servers")
    return row


def launch_of(row: ServerRow) -> Launch:
    return Launch(
        transport=cast(TransportName, row.transport),
        command=row.command,
        args=tuple(row.args),
        env=dict(row.env),
        cwd=row.cwd,
        url=row.url,
        headers=dict(row.headers),
        image=row.image,
    )


def _store_launch(row: ServerRow, launch: Launch) -> None:
    row.transport, row.command, row.args = launch.transport, launch.command, list(launch.args)
    row.env, row.cwd, row.url = dict(launch.env), launch.cwd, launch.url
    row.headers, row.image = dict(launch.headers), launch.image


def server_from_row(row: ServerRow) -> Server:
    return Server(
        name=row.name,
        description=row.description,
        launch=launch_of(row),
        catalog_name=row.catalog_name or "",
        profiles=tuple(sorted(p.name for p in row.profiles)),
        tools=tuple(Tool.from_json(t) for t in row.tools),
        status=row.status,
        last_error=row.last_error,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
