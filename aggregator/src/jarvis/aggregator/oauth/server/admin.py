"""What an admin does to the people who sign in and to their roles (issue 31 item 3), for both ways of doing it: the
CLI (`jarvis user …`, `jarvis role …`) and the admin surface's `user` and `role` tools (decision 0069). Both reach the
same registry records, shared by every replica; see decision 0057 for what a disable does everywhere."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth.server.people import People, Role, granted_scopes, make_role, role_from, user_identity
from jarvis.common.errors import InvalidArgument, NotFound


class PersonVault(Protocol):
    """The downstream token vault as a disable needs it (gateways/vault.py)."""

    async def delete_person(self, person: str) -> int: ...


@dataclass(frozen=True)
class PeopleAdmin:
    store: OAuthStateGateway
    vault: PersonVault | None = None  # None: no vault reachable (then a disable forgets no downstream grant)

    async def users(self) -> list[dict[str, Any]]:
        """Everyone who has signed in: subject, email, name, groups, first and last sign-in, disabled."""
        return [record.body for record in await self.store.list("user")]

    async def set_disabled(self, who: str, disabled: bool) -> dict[str, Any]:
        """Disable or enable the person `who` names (subject or email); their record after it.

        Disabling stamps `not_before` (tokens issued before it stay refused after an enable), revokes the person's
        refresh tokens and forgets their downstream grants and keys (issue 32); every replica refuses their access
        tokens and agent credentials and ends their sessions within its standing cache's life (oauth/standing.py)."""
        who = who.strip()
        for record in await self.store.list("user"):
            if who and who in (record.key, record.body.get("email")):
                body = {**record.body, "disabled": disabled}
                if disabled:
                    body["not_before"] = int(time.time()) + 1  # a token issued in this very second is before it too
                await self.store.put("user", record.key, body)
                if disabled:
                    await self._forget(record.key)
                return body
        raise NotFound(f"no user '{who}'; `jarvis user list` (or user action=list) shows who has signed in")

    async def _forget(self, subject: str) -> None:
        for grant in await self.store.list("refresh"):
            if grant.body.get("user", {}).get("subject") == subject:
                await self.store.revoke_family(grant.family)
        if self.vault is not None:
            await self.vault.delete_person(f"user:{subject}")

    async def roles(self) -> list[Role]:
        return [role_from(record.key, record.body) for record in await self.store.list("role")]

    async def role_scopes(self, subject: str) -> tuple[str, ...]:
        """The scopes the roles give the person `subject` now, each as its role names it (none for someone who never
        signed in): what their role grants explicitly, which a token's scopes may have folded into a wider one."""
        people = People(self.store)
        user = await people.user(subject)
        return await people.scopes_for(user_identity(user)) if user is not None else ()

    async def scopes_of(self, users: Iterable[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
        """The scopes their roles give `users` (their records) now, by subject: one read of the roles for them all,
        where `role_scopes` is two reads a person."""
        roles = await self.roles()
        return {str(body["subject"]): granted_scopes(roles, user_identity(body)) for body in users}

    async def set_role(self, name: str, groups: Iterable[str], users: Iterable[str], scopes: Iterable[str]) -> Role:
        """Create or replace a role; a person's tokens carry it from their next token on."""
        try:
            made = make_role(name, groups, users, scopes)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        await self.store.put("role", made.name, made.record())
        return made

    async def delete_role(self, name: str) -> None:
        if not await self.store.delete("role", name):
            raise NotFound(f"no role '{name}'; `jarvis role list` (or role action=list) shows the roles")
