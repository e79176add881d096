"""Profiles: named sets of installed servers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from jarvis.common.errors import AlreadyExists, InvalidArgument, NotFound
from jarvis.registry.domain.names import validate_name
from jarvis.registry.domain.ports import ClientCascade
from jarvis.registry.domain.records import Profile
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import ProfileRow, ServerRow
from jarvis.registry.storage.types import utcnow


@dataclass(frozen=True)
class Deleted:
    name: str
    removed_from_clients: list[str]


class Profiles:
    def __init__(self, db: Database, clients: Callable[[], ClientCascade] | None = None) -> None:
        self._db = db
        self._clients = clients

    def list(self) -> list[Profile]:
        with self._db.read() as session:
            rows = session.scalars(
                select(ProfileRow).options(selectinload(ProfileRow.servers)).order_by(ProfileRow.name)
            )
            return [profile_from_row(r) for r in rows]

    def get(self, name: str) -> Profile:
        with self._db.read() as session:
            return profile_from_row(find_profile(session, name))

    def exists(self, name: str) -> bool:
        with self._db.read() as session:
            return session.scalar(select(ProfileRow.id).where(ProfileRow.name == name)) is not None

    def create(self, name: str, description: str = "", servers: Iterable[str] = ()) -> Profile:
        name = validate_name(name, "profile")
        with self._db.write() as session:
            _ensure_free(session, name)
            row = ProfileRow(name=name, description=description, servers=_servers_named(session, servers))
            session.add(row)
            session.flush()
            return profile_from_row(row)

    def edit(
        self,
        name: str,
        new_name: str | None = None,
        description: str | None = None,
        add_servers: Iterable[str] = (),
        remove_servers: Iterable[str] = (),
    ) -> Profile:
        """Rename, describe, add and remove members; adding a member twice or removing a non-member is a no-op."""
        add_servers, remove_servers = list(add_servers), list(remove_servers)
        if new_name is None and description is None and not add_servers and not remove_servers:
            raise InvalidArgument("nothing to change: set new_name, description, add_servers or remove_servers")
        with self._db.write() as session:
            row = find_profile(session, name)
            to_add = _servers_named(session, add_servers)
            to_remove = {s.id for s in _servers_named(session, remove_servers)}
            both = sorted({s.name for s in to_add if s.id in to_remove})
            if both:
                raise InvalidArgument(f"server(s) {', '.join(both)} are both added and removed; pick one")
            row.servers = [s for s in row.servers if s.id not in to_remove]
            row.servers.extend(s for s in to_add if s not in row.servers)
            if new_name is not None:
                lowered = validate_name(new_name, "profile")
                if lowered != row.name:
                    _ensure_free(session, lowered)
                    row.name = lowered
            if description is not None:
                row.description = description
            row.updated_at = utcnow()  # membership lives in another table, so onupdate would not fire
            session.flush()
            return profile_from_row(row)

    def delete(self, name: str) -> Deleted:
        """Delete the profile and its entries in client configs, all or nothing."""
        with self._db.write() as session:
            row = find_profile(session, name)
            session.delete(row)
            session.flush()
            clients = self._clients().remove_profile_everywhere(row.name) if self._clients else []
            return Deleted(row.name, sorted(clients))


def find_profile(session: Session, name: str) -> ProfileRow:
    row = session.scalar(select(ProfileRow).where(ProfileRow.name == name.strip().lower()))
    if row is None:
        raise NotFound(f"profile '{name}' not found; jarvis_profile action=list shows the existing profiles")
    return row


def _ensure_free(session: Session, name: str) -> None:
    if session.scalar(select(ProfileRow.id).where(ProfileRow.name == name)) is not None:
        raise AlreadyExists(
            f"profile '{name}' already exists; choose another name or edit it with jarvis_profile action=edit"
        )


def _servers_named(session: Session, names: Iterable[str]) -> list[ServerRow]:
    """Installed servers by name, in the given order; NotFound names every unknown one."""
    wanted = list(dict.fromkeys(n.strip().lower() for n in names))
    if not wanted:
        return []
    rows = {r.name: r for r in session.scalars(select(ServerRow).where(ServerRow.name.in_(wanted)))}
    unknown = [n for n in wanted if n not in rows]
    if unknown:
        raise NotFound(
            f"server(s) {', '.join(unknown)} not installed; install them first "
            "(jarvis_server action=install; jarvis_server action=list shows what is installed)"
        )
    return [rows[n] for n in wanted]


def profile_from_row(row: ProfileRow) -> Profile:
    return Profile(
        name=row.name,
        description=row.description,
        servers=tuple(sorted(s.name for s in row.servers)),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
