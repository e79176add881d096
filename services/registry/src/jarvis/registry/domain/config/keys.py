"""The known configuration keys: type, default and meaning of each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StrictBool, StrictInt, StringConstraints, TypeAdapter, ValidationError

from jarvis.common.errors import InvalidArgument
from jarvis.common.scopes import ADMIN_CONFIG_KEYS
from jarvis.registry.domain.names import NAME_RULE


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL")
    return value


_ProfileName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$")]  # servers' too


@dataclass(frozen=True)
class ConfigKey:
    name: str
    default: Any
    description: str
    takes: str  # what values are accepted, in words, for error messages
    adapter: TypeAdapter[Any]

    @property
    def admin_only(self) -> bool:
        """Setting it needs the admin scope (jarvis.common.scopes.ADMIN_CONFIG_KEYS, enforced by the aggregator)."""
        return self.name in ADMIN_CONFIG_KEYS

    def validate(self, value: Any) -> Any:
        try:
            return self.adapter.validate_python(value, strict=True)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"] if exc.errors() else str(exc)
            raise InvalidArgument(f"config key '{self.name}' takes {self.takes}; got {value!r} ({reason})") from exc


KNOWN_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "aggregator_url",
        "http://127.0.0.1:8765",
        "URL of the Jarvis aggregator that client configs point at.",
        "an http(s) URL string",
        TypeAdapter(Annotated[str, AfterValidator(_http_url)]),
    ),
    ConfigKey(
        "default_profile",
        "default",
        "Profile served when a client does not name one.",
        f"a profile name ({NAME_RULE})",
        TypeAdapter(_ProfileName),
    ),
    ConfigKey(
        "share.default_expiry_seconds",
        3600,
        "Lifetime of a shared server link when the share request gives none.",
        "an integer number of seconds, at least 60",
        TypeAdapter(Annotated[StrictInt, Field(ge=60)]),
    ),
    ConfigKey(
        "discovery.default_limit",
        5,
        "Number of results tool_find returns when the caller gives no limit.",
        "an integer from 1 to 50",
        TypeAdapter(Annotated[StrictInt, Field(ge=1, le=50)]),
    ),
    ConfigKey(
        "usage.enabled",
        True,
        "Whether the aggregator records tool usage statistics.",
        "true or false",
        TypeAdapter(StrictBool),
    ),
    ConfigKey(
        "audit.retention_days",
        30,
        "Days the audit log keeps each tool call (older entries are pruned as new ones arrive).",
        "an integer number of days, at least 1",
        TypeAdapter(Annotated[StrictInt, Field(ge=1)]),
    ),
    ConfigKey(
        "servers.idle_stop_seconds",
        900,
        "Stop a downstream server after this many idle seconds; 0 keeps it running.",
        "an integer number of seconds, 0 or more",
        TypeAdapter(Annotated[StrictInt, Field(ge=0)]),
    ),
    ConfigKey(
        "servers.autostart_profiles",
        [],
        "Profiles whose servers start with Jarvis instead of on first use, and are never stopped as idle.",
        f"a list of profile names ({NAME_RULE})",
        TypeAdapter(list[_ProfileName]),
    ),
    ConfigKey(
        "servers.unprefixed_profiles",
        [],
        "Profiles served without '<server>__' tool-name prefixes while they hold one server.",
        f"a list of profile names ({NAME_RULE})",
        TypeAdapter(list[_ProfileName]),
    ),
    ConfigKey(
        "servers.interactive",
        [],
        "Servers whose tool calls may ask their caller (sampling, elicitation): Jarvis offers them those "
        "capabilities, relays each request to the caller of the call under way, and runs their calls one "
        "at a time so every request reaches the right caller.",
        f"a list of server names ({NAME_RULE})",
        TypeAdapter(list[_ProfileName]),
    ),
    ConfigKey(
        "servers.oauth",
        [],
        "Streamable-HTTP servers each person uses with their own account (OAuth): a person's first call asks "
        "for their authorization (a link), and their calls run on a connection of their own with their tokens.",
        f"a list of server names ({NAME_RULE})",
        TypeAdapter(list[_ProfileName]),
    ),
    ConfigKey(
        "servers.oauth_clients",
        {},
        "Pre-registered OAuth clients of Jarvis at the authorization servers of servers in servers.oauth, by "
        "server: client_id, client_secret (or ${ENV_VAR}, read where Jarvis runs) and token_endpoint_auth_method "
        "(none, client_secret_basic, client_secret_post). Without one, Jarvis uses its client metadata document "
        "or registers dynamically.",
        "an object: server name -> {client_id, client_secret, token_endpoint_auth_method}",
        TypeAdapter(dict[_ProfileName, dict[str, str]]),
    ),
    ConfigKey(
        "servers.per_person",
        {},
        "Servers whose env variables (stdio, container) or headers (streamable-http) are each person's own, by "
        "server: the names. Each person sets theirs (jarvis_server action=connect) and their calls run on an "
        "instance of their own.",
        "an object: server name -> list of env variable or header names",
        TypeAdapter(dict[_ProfileName, list[str]]),
    ),
    ConfigKey(
        "log_level",
        "INFO",
        "Log level of Jarvis processes.",
        "one of DEBUG, INFO, WARNING, ERROR",
        TypeAdapter(Literal["DEBUG", "INFO", "WARNING", "ERROR"]),
    ),
)
KEYS_BY_NAME = {k.name: k for k in KNOWN_KEYS}
if unknown_admin_keys := ADMIN_CONFIG_KEYS - KEYS_BY_NAME.keys():
    raise RuntimeError(f"ADMIN_CONFIG_KEYS names no config key: {sorted(unknown_admin_keys)}")


def known_key(name: str) -> ConfigKey:
    key = KEYS_BY_NAME.get(name.strip())
    if key is None:
        raise InvalidArgument(f"unknown config key '{name}'; known keys: {', '.join(KEYS_BY_NAME)}")
    return key
