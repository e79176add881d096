"""Agents act for someone (issue 31 item 4, decision 0057): the credential an agent session carries.

When a signed-in person spawns an agent session (orchestrator `session action=spawn`), Jarvis mints the agent a JWT
access token of the same kind as the person's own: its subject is the person, its scopes are the spawning token's
scopes bound to the session's project (`orchestrator` becomes `orchestrator@p…`; `admin` becomes each surface bound to
it) and its downstream ones (`profile…`, `servers…`, which name no project: the agent's calls to those servers use
its person's own downstream credentials, which never enter the container). It is good at every MCP surface of this
Jarvis and, with downstream scopes, at each profile served when it was minted (its `aud` lists them), while its
session runs and for at most `JARVIS_AGGREGATOR_AGENT_CREDENTIAL_SECONDS` (oauth/agent_sessions.py); its `session`
claim names the session, whose id Jarvis picks and the runtime uses. The agent finds it in `JARVIS_TOKEN` (with
`JARVIS_URL`), masked in its output like a secret. Its calls are then authorized as that person within that
project and audited as "alice@example.com via session s…"; the person's standing is checked on each one, so
disabling them stops their agents too. A `jv_` token (a machine) spawns sessions without one, as before.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.keys import SigningKeys
from jarvis.aggregator.oauth.server.people import People, narrowed, user_identity
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common import tracing
from jarvis.common.errors import Unauthenticated
from jarvis.common.scopes import PROJECT_SEPARATOR
from jarvis.common.surfaces import PROFILE_PATH_PREFIX

AGENT_CREDENTIAL_SECONDS = 86400  # the runtime's default cap on a session; good only while it runs (decision 0058)
AGENT_CLIENT_ID = "jarvis-agent"
TOKEN_VARIABLE = "JARVIS_TOKEN"  # noqa: S105 - the variable's name, not a secret
URL_VARIABLE = "JARVIS_URL"
RUN_CREDENTIAL_PREFIX = "jva_"
# The surfaces a project-bound scope can name (debug and discovery are reached through these, or not at all).
BOUND_SURFACES = ("orchestrator", "jarvis")
# The downstream servers' tools, which name no project: an agent reaches them as its person, unbound (decision 0058).
DOWNSTREAM_SURFACES = ("profile", "servers")


@dataclass(frozen=True)
class AgentCredential:
    session_id: str
    token: str
    scopes: tuple[str, ...]

    def environment(self, url: str) -> dict[str, str]:
        return {TOKEN_VARIABLE: self.token, URL_VARIABLE: url}


def project_scopes(granted: Sequence[str], project_id: str) -> tuple[str, ...]:
    """The part of `granted` that acts on `project_id` only: each scope meets each surface bound to the project (the
    scope lattice of decision 0055), so it is never wider than what was granted."""
    return narrowed(granted, [f"{surface}{PROJECT_SEPARATOR}{project_id}" for surface in BOUND_SURFACES])


def downstream_scopes(granted: Sequence[str]) -> tuple[str, ...]:
    """The part of `granted` that calls downstream servers (`profile…`, `servers…`): an agent's calls to them are its
    person's, with the person's own downstream credentials, which stay in Jarvis (issue 32 item 5)."""
    # Bound ones reach no server (their calls name no project); `<surface>:read` none either (downstream annotations
    # are never trusted, so `read` covers no downstream tool): both would only clutter the credential.
    return tuple(
        s for s in narrowed(granted, DOWNSTREAM_SURFACES) if PROJECT_SEPARATOR not in s and not s.endswith(":read")
    )


def agent_scopes(granted: Sequence[str], project_id: str) -> tuple[str, ...]:
    """What an agent spawned in `project_id` by someone holding `granted` may do: never wider than `granted`."""
    return project_scopes(granted, project_id) + downstream_scopes(granted)


@dataclass
class AgentCredentials:
    """Mints agents' credentials with the protected resource's signing keys; none without sign-in."""

    issuer: Callable[[], Awaitable[str]]
    keys: SigningKeys | None = None
    paths: tuple[str, ...] = ()  # every MCP surface's path: the credential's audiences
    # The profiles served now: an agent that may call downstream servers gets each one's endpoint as an audience too.
    profiles: Callable[[], Iterable[str]] = tuple
    ttl_seconds: int = AGENT_CREDENTIAL_SECONDS
    url_path: str = "/mcp/orchestrator"
    minted: int = field(default=0, compare=False)

    async def for_session(self, principal: Principal, project_id: str) -> tuple[AgentCredential, str] | None:
        """A credential for a new session of `project_id` spawned by `principal`, and the URL to use it at; None when
        the caller is no signed-in person (or sign-in is off) or none of their scopes reaches the project."""
        if self.keys is None or not principal.user:
            return None
        bound = project_scopes(principal.scopes, project_id)
        if not bound:
            return None
        downstream = downstream_scopes(principal.scopes)
        scopes = bound + downstream
        base = (await self.issuer()).rstrip("/")
        session_id = "s" + secrets.token_hex(6)  # the runtime's own form of a session id
        profiles = [PROFILE_PATH_PREFIX + name for name in sorted(self.profiles())] if downstream else []
        paths = [*self.paths, *profiles]
        token = access_tokens.issue(
            self.keys,
            issuer=base,
            subject=principal.user,
            audience=[base + path for path in paths],
            scopes=scopes,
            client_id=AGENT_CLIENT_ID,
            ttl_seconds=self.ttl_seconds,
            name=principal.name,
            session=session_id,
            # The spawn's trace (the call's, around the runtime's): the agent's calls with it join it (decision 0066).
            trace=tracing.carrier(),
        )
        self.minted += 1
        return AgentCredential(session_id, token, scopes), base + self.url_path

    async def session_credential(self, principal: Principal, project_id: str) -> tuple[str, dict[str, str]] | None:
        """The session id and agent environment of `for_session` (context.AgentMinter)."""
        minted = await self.for_session(principal, project_id)
        if minted is None:
            return None
        credential, url = minted
        return credential.session_id, credential.environment(url)


class RunCredentials:
    """Scheduled runs' credentials (`jva_…`), which the scheduler stores in the registry for the schedule's owner
    (kind `agent`, under the secret's SHA-256): the person, the project, the session. Their calls are the person's,
    with what the person's roles grant now bound to that project (the scheduler holds no signing keys, and a
    schedule outlives any token its creator had, so the roles, not a token, bound it)."""

    def __init__(self, store: OAuthStateGateway) -> None:
        self.store = store
        self.people = People(store)

    @staticmethod
    def is_run_credential(secret: str) -> bool:
        return secret.startswith(RUN_CREDENTIAL_PREFIX)

    async def principal(self, secret: str) -> Principal:
        stored = await self.store.get("agent", hashlib.sha256(secret.encode()).hexdigest())
        if stored is None:
            raise Unauthenticated("unknown or expired run credential: its run is over")
        grant = stored.body
        user = await self.people.user(str(grant.get("subject", "")))
        if user is None:
            raise Unauthenticated("the person this run acts for is unknown to Jarvis")
        identity = user_identity(user)
        scopes = agent_scopes(await self.people.scopes_for(identity), str(grant["project_id"]))
        return Principal(
            token_id="user:" + identity.subject,
            name=identity.email or identity.name or identity.subject,
            scopes=scopes,
            user=identity.subject,
            issued_at=int(grant.get("issued_at") or 0),
            via=f"session {grant.get('session_id', '')}",
            trace=tuple(tracing.fields(grant.get("trace")).items()),
        )
