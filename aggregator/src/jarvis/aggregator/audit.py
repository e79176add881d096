"""What the audit log keeps of a tool call: who, where, on what, and its arguments redacted by schema.

Arguments are kept only where the tool's input schema names them (unknown fields are dropped),
never for fields named like a secret (secret, token, password, key, env, credential, auth, ...),
nor, in a call whose action is named like one (`project action=secret_set`), for any field but the
action and what it acts on (the secret's value is a field called `value`), and only as scalars
(strings cut to 200 characters, any URL in them without its userinfo or credential-like query values,
`jarvis.common.urls`); a list or object is kept as its size, since
it can carry anything (a command line, an environment). The entries travel with the usage events
(`jarvis.aggregator.usage`), so every replica's calls land in the registry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.urls import masked_urls

SECRET_NAME = re.compile(r"secret|token|passw|key|env|credential|auth|cookie|private|signature", re.IGNORECASE)
_MAX_TEXT = 200
# The argument that says what a call acts on, in order of preference.
_TARGETS = ("project_id", "server", "profile", "name", "path", "schedule_id", "session_id")


@dataclass(frozen=True)
class AuditFields:
    token_id: str  # a signed-in person's calls: user:<subject>, whatever client or agent session made them
    token_name: str  # who: a token's name, or "alice@example.com via token <client>" / "... via session <id>"
    surface: str
    target: str
    outcome: str
    arguments_json: str


def redact(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments the audit log may keep (see the module docstring)."""
    properties = (schema or {}).get("properties")
    known = properties if isinstance(properties, Mapping) else {}
    kept: dict[str, Any] = {}
    action = arguments.get("action")
    secret_action = isinstance(action, str) and bool(SECRET_NAME.search(action))
    for name, value in arguments.items():
        if name not in known:
            continue
        if SECRET_NAME.search(name) or (secret_action and name not in ("action", *_TARGETS)):
            kept[name] = "[redacted]"
        elif isinstance(value, str):
            value = masked_urls(value)  # before the cut, which could leave a URL's userinfo without its `@`
            kept[name] = value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + "…"
        elif value is None or isinstance(value, (bool, int, float)):
            kept[name] = value
        elif isinstance(value, Mapping):
            kept[name] = f"[object of {len(value)} fields]"
        elif isinstance(value, list):
            kept[name] = f"[list of {len(value)} items]"
    return kept


def target_of(kept: Mapping[str, Any], default: str = "") -> str:
    """What the call acts on, from its kept (redacted) arguments."""
    for name in _TARGETS:
        value = kept.get(name)
        if isinstance(value, str) and value and value != "[redacted]":
            return value[:_MAX_TEXT]
    return default


def fields(
    principal: Principal,
    surface: str,
    arguments: Mapping[str, Any] | None,
    schema: Mapping[str, Any] | None,
    outcome: str,
    target: str = "",
) -> AuditFields:
    kept = redact(arguments or {}, schema)
    return AuditFields(
        principal.token_id,
        principal.who,
        surface,
        target or target_of(kept),
        outcome,
        json.dumps(kept, separators=(",", ":"), ensure_ascii=False, default=str),
    )
