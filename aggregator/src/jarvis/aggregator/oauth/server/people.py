"""Users and roles, as far as sign-in needs them (issue 31 item 3's minimum).

A user record appears at first sign-in and is refreshed at each (email, name and groups as the provider says
now). A role maps identity-provider groups, and single users by subject or email, to Jarvis scopes; an admin
sets roles with `jarvis role set`. A person's scopes are the union of their roles' scopes; none matching, none.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth.upstream import Identity
from jarvis.common.errors import InvalidArgument
from jarvis.common.scopes import (
    ADMIN,
    ALL,
    METRICS,
    PROJECT_SEPARATOR,
    READ,
    covers,
    covers_unbound,
    validate_scope,
    validate_scopes,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Role:
    name: str
    groups: tuple[str, ...]
    users: tuple[str, ...]  # subjects or emails
    scopes: tuple[str, ...]

    def record(self) -> dict[str, Any]:
        return {"groups": list(self.groups), "users": list(self.users), "scopes": list(self.scopes)}

    def covers(self, user: Identity) -> bool:
        return bool(set(self.groups) & set(user.groups)) or bool({user.subject, user.email} & set(self.users) - {""})


def role_from(name: str, body: dict[str, Any]) -> Role:
    return Role(name, tuple(body.get("groups", ())), tuple(body.get("users", ())), tuple(body.get("scopes", ())))


def make_role(name: str, groups: Iterable[str], users: Iterable[str], scopes: Iterable[str]) -> Role:
    """A role checked as an admin gives it: a name, at least one group or user, valid Jarvis scopes."""
    name = name.strip()
    if not name or len(name) > 100:
        raise ValueError("a role name is required (1-100 characters), e.g. 'developers'")
    groups, users = tuple(g for g in groups if g), tuple(u for u in users if u)
    if not groups and not users:
        raise ValueError("a role maps at least one --group (as the identity provider names it) or --user")
    return Role(name, groups, users, validate_scopes(scopes))


def user_identity(body: dict[str, Any]) -> Identity:
    return Identity(
        str(body["subject"]), str(body.get("email", "")), str(body.get("name", "")), tuple(body.get("groups", ()))
    )


class People:
    def __init__(self, store: OAuthStateGateway) -> None:
        self.store = store

    async def signed_in(self, identity: Identity) -> dict[str, Any]:
        """The user record after this sign-in: made at the first, refreshed at each; `disabled` and `not_before`
        are kept."""
        known = await self.store.get("user", identity.subject)
        now = int(time.time())
        body = {
            "subject": identity.subject,
            "email": identity.email,
            "name": identity.name,
            "groups": list(identity.groups),
            "first_seen": known.body.get("first_seen", now) if known else now,
            "last_seen": now,
            "disabled": bool(known.body.get("disabled")) if known else False,
            # Tokens issued before a disable stay refused after it (oauth/standing.py, decision 0057).
            "not_before": int(known.body.get("not_before") or 0) if known else 0,
        }
        await self.store.put("user", identity.subject, body)
        if not identity.groups and identity.groups_claim and any(role.groups for role in await self.roles()):
            # A group role that can never match is the commonest misconfiguration (groups under another claim, or only
            # in userinfo): say where Jarvis looked and what came instead. Names only: claim values are the person's.
            log.warning(
                "sign-in: roles name groups, but the identity provider sent none under the claim %r "
                "(JARVIS_OIDC_GROUPS_CLAIM); the claims that arrived: %s",
                identity.groups_claim,
                ", ".join(identity.arrived) or "none",
            )
        return body

    async def user(self, subject: str) -> dict[str, Any] | None:
        stored = await self.store.get("user", subject)
        return stored.body if stored is not None else None

    async def roles(self) -> list[Role]:
        return [role_from(r.key, r.body) for r in await self.store.list("role")]

    async def scopes_for(self, user: Identity) -> tuple[str, ...]:
        return granted_scopes(await self.roles(), user)


def granted_scopes(roles: Iterable[Role], user: Identity) -> tuple[str, ...]:
    """The scopes `roles` give `user`, each once, in the roles' order."""
    granted: list[str] = []
    for role in roles:
        if role.covers(user):
            granted += [s for s in role.scopes if s not in granted]
    return tuple(granted)


def meet(granted: str, asked: str) -> str | None:
    """The widest scope both allow (their intersection in the scope lattice), or None when they share nothing the
    grammar can name: `jarvis` and `jarvis:jarvis_check_status` meet at `jarvis:jarvis_check_status`,
    `orchestrator@p1` and `orchestrator:session` at `orchestrator:session@p1`. See decision 0055."""
    base, _, project = granted.partition(PROJECT_SEPARATOR)
    asked_base, _, asked_project = asked.partition(PROJECT_SEPARATOR)
    if project and asked_project and project != asked_project:
        return None
    bound = project or asked_project
    if covers_unbound(base, asked_base):
        narrower = asked_base
    elif covers_unbound(asked_base, base):
        narrower = base
    elif READ in (base, asked_base):
        # `read` meets a whole surface at that surface's read-only actions: `read` and `jarvis` give `jarvis:read`
        # (it shares with one tool of a surface only that tool's read-only actions, which no scope names).
        surface = asked_base if base == READ else base
        if ":" in surface or surface in (ADMIN, ALL, METRICS, READ):
            return None
        narrower = f"{surface}:{READ}"
    else:
        return None
    if bound and narrower in (ADMIN, ALL, METRICS):
        return None  # admin, * and metrics are never bound to a project
    return narrower + (PROJECT_SEPARATOR + bound if bound else "")


def narrowed(granted: Sequence[str], requested: Sequence[str]) -> tuple[str, ...]:
    """What a client gets: for each scope it asked for, its intersection with each of the person's role scopes
    (the asked scope where a role covers it, the role's narrower scope where the asked one covers that); all the
    role scopes when it asked none. So a client asking `jarvis` for a person whose role grants only
    `jarvis:jarvis_check_status` gets that tool, not nothing, and never more than it asked or the roles grant.

    A scope asked for that is not in Jarvis's grammar gives nothing (and refuses nothing)."""
    if not requested:
        return tuple(granted)
    kept: list[str] = []
    for asked in requested:
        try:
            asked = validate_scope(asked)
        except InvalidArgument:
            continue
        for role_scope in granted:
            common = meet(role_scope, asked)
            if common is not None and common not in kept:
                kept.append(common)
    # A scope another one kept covers adds nothing: a `jarvis` and `read` role asked for `jarvis` gives `jarvis`,
    # not `jarvis jarvis:read`.
    return tuple(s for s in kept if not any(o != s and covers(o, s) for o in kept))
