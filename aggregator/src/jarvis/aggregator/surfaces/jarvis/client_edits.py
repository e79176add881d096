"""One client edit, as `jarvis_client action=edit` and `jarvis client edit` both make it: the names a caller gives
sorted into servers, profiles and Jarvis's own surfaces, and the token the new entries carry where one is needed: none
for a client that signs in where Jarvis serves sign-in (jarvis.common.client_sign_in)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from jarvis.aggregator.gateways.protocols import RegistryApi
from jarvis.aggregator.gateways.registry_admin import ClientEdit
from jarvis.aggregator.surfaces.paths import SURFACE_PATHS
from jarvis.aggregator.tooling.principal import Principal
from jarvis.aggregator.views.registry import ClientEdited
from jarvis.common import scopes
from jarvis.common.client_sign_in import SIGN_IN_CLIENTS
from jarvis.common.errors import InvalidArgument, JarvisError, NotFound, PermissionDenied
from jarvis.common.surfaces import ENTRY_NAMES_HELP

PROFILE_PREFIX = "profile:"
SURFACES = tuple(SURFACE_PATHS)


@dataclass(frozen=True)
class EntryNames:
    """The names of one list (`add` or `remove`), by what they stand for."""

    servers: list[str]
    profiles: list[str]
    surfaces: list[str]

    @classmethod
    def of(cls, names: Sequence[str]) -> EntryNames:
        """`profile:<name>` is a profile; a surface's name is that surface (it wins over a server of the same
        name, which a profile holding it can still reach); anything else is an installed server."""
        profiles = [n.removeprefix(PROFILE_PREFIX) for n in names if n.startswith(PROFILE_PREFIX)]
        rest = [n for n in names if not n.startswith(PROFILE_PREFIX)]
        surfaces = [n.strip().lower() for n in rest if n.strip().lower() in SURFACE_PATHS]
        servers = [n for n in rest if n.strip().lower() not in SURFACE_PATHS]
        return cls(servers, profiles, surfaces)

    def scopes(self) -> list[str]:
        """What a token for these entries needs: each profile, each server wherever it is served, each surface."""
        return [
            *(f"profile:{p}" for p in self.profiles),
            *(f"servers:{s}" for s in self.servers),
            *self.surfaces,
        ]

    def unreached(self, principal: Principal) -> list[str]:
        """The scopes of `scopes()` the caller does not hold itself: an edit never grants more than it has."""
        missing = [f"profile:{p}" for p in self.profiles if not _may(principal, "profile", p)]
        missing += [
            f"servers:{s}" for s in self.servers if not (_may(principal, "servers", s) or _may(principal, "profile", s))
        ]
        whole = set(principal.scopes)
        missing += [s for s in self.surfaces if not ({s, scopes.ADMIN} & whole)]
        return missing


def _may(principal: Principal, surface: str, target: str) -> bool:
    return principal.may(surface, target, None, read_only=False, admin=False)


def client_edit(
    name: str, add: Sequence[str], remove: Sequence[str], path: str | None
) -> tuple[ClientEdit, EntryNames]:
    if not add and not remove:
        raise InvalidArgument(f"a client edit needs names to add or remove: {ENTRY_NAMES_HELP}")
    added, removed = EntryNames.of(add), EntryNames.of(remove)
    edit = ClientEdit(
        name,
        added.servers,
        added.profiles,
        removed.servers,
        removed.profiles,
        path=path,
        add_surfaces=added.surfaces,
        remove_surfaces=removed.surfaces,
    )
    return edit, added


async def write_client_edit(
    registry: RegistryApi,
    edit: ClientEdit,
    added: EntryNames,
    principal: Principal,
    *,
    tokens_required: bool,
    sign_in: bool = False,
) -> ClientEdited:
    """Write the edit; where this instance requires tokens, the new entries carry one made for them, unless it serves
    sign-in (`sign_in`) and the client signs in: its entries then carry none, and a note says how to sign in.

    The token is scoped to exactly those entries and named after the client (`token list` shows where it lives,
    `token revoke` ends it); it is revoked again if the edit is refused.
    """
    wanted = added.scopes()
    if not tokens_required or not wanted:
        return await _edit(registry, edit)
    how = SIGN_IN_CLIENTS.get(edit.name) if sign_in else None
    if how is not None:
        done = await _edit(registry, edit)
        client = done.client.display_name if done.client is not None else edit.name
        note = f"these entries carry no token: {client} signs in to Jarvis ({how})"
        return dataclasses.replace(done, notes=[*done.notes, note])
    missing = added.unreached(principal)
    if missing:
        raise PermissionDenied(
            f"your token does not hold {', '.join(missing)}, so Jarvis will not write a client entry with a token "
            f"for it; ask an admin for a token with scope {missing[0]}"
        )
    refs = ",".join([*added.profiles, *added.servers, *added.surfaces])
    created = await registry.create_token(f"client:{edit.name}:{refs}"[:200], wanted)
    edit = dataclasses.replace(edit, authorization=f"Bearer {created.secret}")
    try:
        return await _edit(registry, edit)
    except JarvisError:
        await registry.revoke_token(created.token.id)  # the entry was not written: its token must not outlive it
        raise


async def _edit(registry: RegistryApi, edit: ClientEdit) -> ClientEdited:
    try:
        return await registry.edit_client(edit)
    except NotFound as exc:
        if not exc.message.startswith("server '"):
            raise
        # `add=["core"]` meant a profile, or a name that is none of them: say what names an entry takes.
        raise NotFound(f"{exc.message}; a client entry names {ENTRY_NAMES_HELP}") from exc
