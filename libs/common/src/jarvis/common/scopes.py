"""Token scopes: one grammar, validated where tokens are made and enforced where calls arrive.

  `admin` or `*`                  everything
  `read`                          every read-only action on every surface
  `<surface>`                     every non-admin action of that surface
  `<surface>:read`                every read-only action of that surface
  `<surface>:<tool>`              every non-admin action of that tool
  `<surface>:<tool>:<action>`     that action
Actions that define a command or an image ("admin" actions) need `admin` or `*`.

Any scope but `admin`/`*` may be bound to one project with a suffix `@<project_id>`
(`orchestrator@p1a2b3c4d5`, `orchestrator:session:spawn@p1a2b3c4d5`, `read@p1a2b3c4d5`): it then
allows only calls that name that project (their `project_id`), so a token for project A cannot
touch project B, and it allows no call that names no project.

`metrics` allows one thing only: reading the aggregator's `/metrics` where it needs a token (by default
whenever tokens are required). `read` does not include it; `admin` and `*` do. It takes no tool, action or
project: the metrics span every server and project.

The `admin` surface (people and roles) has only admin actions: `admin` or `*` reach it, and no scope names it.

Installed downstream servers' tools are addressed as the surface `servers`: `servers`,
`servers:<server>`, `servers:<server>:<tool>`. Every valid token reaches the `discovery`
surface (`OPEN_SURFACES`), which only finds and calls what the token's other scopes allow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from jarvis.common.errors import InvalidArgument

ADMIN = "admin"
ALL = "*"
READ = "read"
# Reading the aggregator's /metrics, and nothing else (least privilege for a Prometheus scraping it).
METRICS = "metrics"
GRAMMAR = (
    "'<surface>[:<tool>[:<action>]]' (e.g. 'jarvis', 'jarvis:jarvis_server', 'jarvis:jarvis_server:list', "
    "'orchestrator:project:create'), '<surface>:read', 'read' (every read-only action), 'metrics' (/metrics only), "
    "'admin' or '*'; "
    "any but admin may end in '@<project_id>' to allow one project only"
)
_SEGMENT = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
# After the surface, a segment may also name a server or profile (`share:1password`, `profile:web.v2`).
_NAME_SEGMENT = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_PROJECT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
PROJECT_SEPARATOR = "@"
# Settings only an admin may set: each weakens security or the audit trail, or flows into what other people run
# or connect to. The one list, checked whole by the tests; the registry's key definitions (config/keys.py) say so
# in each key's description, and refuse a name here that is no key.
ADMIN_CONFIG_KEYS = frozenset(
    {
        "aggregator_url",  # every client config Jarvis writes points at it
        "audit.retention_days",  # a short retention prunes the audit trail
        "usage.enabled",  # off, tool calls are no longer recorded (nor audited)
        "share.default_expiry_seconds",  # a share link that lives for a century
        "servers.interactive",  # lets a server ask callers for sampling and elicitation
        "servers.oauth",  # sends each person through a server's authorization with their own account
        "servers.oauth_clients",  # which client (and secret) Jarvis presents to those authorization servers
        "servers.per_person",  # which of a server's env variables or headers each person sets for themselves
        "log_level",  # what the logs keep for an investigation
    }
)
# Surfaces every valid token reaches: the discovery surface only shows, and only calls, what the
# token's other scopes allow, so it needs no scope of its own.
OPEN_SURFACES = frozenset({"discovery"})
# Surfaces whose every action is an admin's: only `admin` or `*` reach them, so a scope naming one (`admin:user`, which
# would read as "the admin surface's user tool") would grant nothing and is refused where it is made.
ADMIN_SURFACES = frozenset({ADMIN})


def validate_scope(scope: str) -> str:
    """The scope, normalised to lower case, or InvalidArgument stating the grammar."""
    normalised = scope.strip().lower()
    base, bound, project = normalised.partition(PROJECT_SEPARATOR)
    if bound and (base in (ADMIN, ALL) or not _PROJECT.match(project)):
        raise InvalidArgument(f"invalid scope '{scope}'; a scope is {GRAMMAR}")
    if base in (ADMIN, ALL, READ):
        return normalised
    parts = base.split(":")
    if parts[0] == METRICS and normalised != METRICS:
        raise InvalidArgument(f"invalid scope '{scope}'; '{METRICS}' takes no tool, action or project")
    if len(parts) > 3 or not _SEGMENT.match(parts[0]) or not all(_NAME_SEGMENT.match(p) for p in parts[1:]):
        raise InvalidArgument(f"invalid scope '{scope}'; a scope is {GRAMMAR}")
    if parts[0] in ADMIN_SURFACES:
        raise InvalidArgument(
            f"invalid scope '{scope}': every action of the {parts[0]} surface needs the '{ADMIN}' scope itself; "
            f"give '{ADMIN}'"
        )
    return normalised


def validate_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    checked = tuple(dict.fromkeys(validate_scope(s) for s in scopes))
    if not checked:
        raise InvalidArgument(f"a token needs at least one scope; a scope is {GRAMMAR}")
    return checked


def allows(
    scopes: Iterable[str],
    surface: str,
    tool: str,
    action: str | None,
    *,
    read_only: bool,
    admin: bool = False,
    project: str | None = None,
) -> bool:
    """Whether `scopes` permit calling `action` (None for single-purpose tools) of `tool` on `surface`.

    `project` is the project the call names, if any; scopes bound to a project only match it.
    """
    if surface in OPEN_SURFACES and not admin:
        return True
    target = (surface, tool, action or "")
    for bound_scope in scopes:
        scope, _, bound = bound_scope.partition(PROJECT_SEPARATOR)
        if bound and bound != project:
            continue
        if scope in (ADMIN, ALL):
            return True
        if admin:
            continue
        if scope == READ:
            if read_only:
                return True
            continue
        parts = tuple(scope.split(":"))
        if parts == (surface, READ):
            if read_only:
                return True
            continue
        if parts == target[: len(parts)]:
            return True
    return False


def granting(
    surface: str, tool: str, action: str | None, *, read_only: bool, admin: bool = False, project: str | None = None
) -> list[str]:
    """Scopes that would allow the call `allows` refused, narrowest first, for the refusal to name."""
    if admin:
        return [ADMIN]
    bound = f"{PROJECT_SEPARATOR}{project}" if project else ""
    path = [surface, tool] + ([action] if action else [])
    candidates = [":".join(path[:n]) + bound for n in range(len(path), 0, -1)]
    if read_only:
        candidates += [f"{surface}:{READ}{bound}", f"{READ}{bound}"]
    return [*candidates, ADMIN]


def reaches_surface(scopes: Iterable[str], surface: str) -> bool:
    """Whether any scope reaches `surface` at all (else the HTTP layer refuses with 403)."""
    if surface in OPEN_SURFACES:
        return True
    bases = [s.partition(PROJECT_SEPARATOR)[0] for s in scopes]
    if surface in ADMIN_SURFACES:
        return any(b in (ADMIN, ALL) for b in bases)
    return any(b in (ADMIN, ALL, READ) or b.split(":")[0] == surface for b in bases)


def reads_metrics(scopes: Iterable[str]) -> bool:
    """Whether `scopes` may read the aggregator's /metrics where it needs a token: `metrics`, `admin` or `*`."""
    return any(s in (METRICS, ADMIN, ALL) for s in scopes)


def covers_unbound(wide: str, narrow: str) -> bool:
    """Whether the unbound scope `wide` allows all that `narrow` does (`jarvis` covers `jarvis:jarvis_server:list`
    and `jarvis:read`; `read` covers `<surface>:read`; `admin` and `*` cover all)."""
    if wide in (ADMIN, ALL) or wide == narrow:
        return True
    if narrow in (ADMIN, ALL, READ, METRICS) or wide == METRICS:
        return False
    if wide == READ:
        return narrow.count(":") == 1 and narrow.endswith(":" + READ)
    return narrow.startswith(wide + ":")


def covers(granted: str, asked: str) -> bool:
    """Whether the granted scope allows all that the asked one does: the same, a narrower tool or action of it,
    or it bound to a project the granted one is not bound to (`jarvis` covers `jarvis:jarvis_server@p1`). Judged on
    the grammar alone: `read` does not cover `<surface>:<tool>:<action>` even where that action only reads."""
    base, _, project = granted.partition(PROJECT_SEPARATOR)
    asked_base, _, asked_project = asked.partition(PROJECT_SEPARATOR)
    if project and project != asked_project:
        return False
    return covers_unbound(base, asked_base)


def uncovered(held: Iterable[str], wanted: Iterable[str]) -> list[str]:
    """The scopes of `wanted` that no scope of `held` covers, in their order: what a token made with `wanted` by
    someone holding `held` could do that its maker cannot."""
    held = tuple(held)
    return [w for w in wanted if not any(covers(h, w) for h in held)]
