"""Settings of the aggregator process (env prefix JARVIS_AGGREGATOR_)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import AliasChoices, BaseModel, Field, field_validator
from pydantic_settings import SettingsConfigDict

from jarvis.common import addresses
from jarvis.common.settings import ProcessSettings

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return addresses.is_loopback(ipaddress.ip_address(host))
    except ValueError:
        return False


class RateLimitSetting(BaseModel):
    per_second: float = 0.0
    burst: int = 0
    concurrent: int = 0


class CodeModeRole(BaseModel):
    """code_run for the tokens holding one scope or a narrower form of it (a role grants its scopes): off, or with
    tighter limits."""

    enabled: bool = True
    calls: int | None = None
    concurrent: int | None = None
    timeout: float | None = None


class AggregatorSettings(ProcessSettings):
    model_config = SettingsConfigDict(env_prefix="JARVIS_AGGREGATOR_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8765
    registry_target: str = "127.0.0.1:50051"
    # The debug service behind the `debug` surface; empty: the surface says it is not deployed.
    debug_target: str = ""
    runtime_target: str = ""  # host:port of the runtime service; empty: no runtime in this deployment
    scheduler_target: str = ""  # host:port of the scheduler service; empty: no scheduler in this deployment
    # Stateless streamable HTTP: no per-process session state, for replicas behind a plain balancer.
    stateless: bool = False
    # Aggregator processes sharing the port (0: one per core); more than one implies `stateless`.
    workers: int = Field(default=1, ge=0)
    # Set by the main process when there are several workers: which one this is, and the private directory
    # where each publishes its metrics so that any worker's /metrics answers for all (worker_metrics.py).
    worker_slot: int = Field(default=0, ge=0)
    metrics_dir: str = ""
    # Plain JSON answers to POSTs: no Jarvis tool streams per-request notifications, and SSE framing
    # costs about a fifth of the request path. list_changed still flows on the GET stream.
    json_response: bool = True
    # Tool calls answered without the SDK's per-request machinery: Jarvis's own surfaces' (direct_calls.py), and
    # profiles' where the answer is a JSON body (downstream/proxy/direct.py); and requests to streamable-HTTP servers
    # sent without the SDK's client (downstream/transport/http_calls.py). The same answers for less CPU. Off: every
    # request goes through the SDK, as a check of that claim.
    direct_tool_calls: bool = True
    # How long hot registry reads (the server list) are served from the aggregator's cache.
    read_cache_seconds: float = 2.0
    # None: decided by the bind address (required beyond loopback, optional on loopback).
    require_auth: bool | None = None
    # /metrics names installed servers and tools: whether reading it needs a token with the `metrics` scope (or
    # admin). None: whenever tokens are required (auth_required); True or False decide it whatever else is set.
    metrics_require_token: bool | None = None
    # Extra Host header values accepted beyond loopback (e.g. "jarvis.example.com", "10.0.0.5:8765").
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    # Reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed: addresses or CIDRs, comma-separated
    # (`10.0.0.0/8,127.0.0.1`). Empty: none, so a request's client address is the one it connected from whatever
    # headers it sends (uvicorn on its own believes 127.0.0.1's, and a header made up per request escaped every limit
    # per client address: issue 44 finding 10).
    trusted_proxies: str = Field(default="", validation_alias=AliasChoices("JARVIS_TRUSTED_PROXIES"))
    max_body_bytes: int = 1024 * 1024
    # Downstream MCP servers: time to finish initialize, the default deadline of a proxied call, the
    # largest message a stdio server may send, and how often the registry is re-read for changes.
    downstream_init_timeout: float = 30.0
    downstream_call_timeout: float = 300.0
    # How long a profile's tools/list waits for servers never started before; the rest follow by list_changed
    # (a client's first listing must not time out behind a slow `npx`).
    downstream_list_wait: float = Field(default=2.0, ge=0)
    downstream_max_message_bytes: int = 8 * 1024 * 1024
    downstream_watch_seconds: float = 2.0
    token_cache_seconds: float = 5.0
    # An agent session's credential is good this long at most, and only while its session runs (decision 0058):
    # by default the runtime's own cap on a session (JARVIS_RUNTIME_SESSION_MAX_SECONDS).
    agent_credential_seconds: int = Field(default=86400, ge=60)
    # Open MCP sessions one token may hold on this replica (0: no cap); the local user is not capped.
    max_sessions_per_token: int = 200
    # Per token and tool, per replica: calls per second (0: off), the burst allowed before that rate
    # applies, and calls in flight (0: off). `rate_limit_tools` overrides them for named tools, as JSON:
    # {"jarvis_project": {"per_second": 1, "burst": 2, "concurrent": 1}}.
    rate_limit_per_second: float = 20.0
    rate_limit_burst: int = 40
    rate_limit_concurrent: int = 8
    rate_limit_tools: dict[str, RateLimitSetting] = Field(default_factory=dict)
    # code_run (issue 35): off for everyone, the longest wall time a caller may ask for, and per scope (so per
    # role) off or limited, as JSON: {"read": {"enabled": false}, "jarvis": {"calls": 20, "timeout": 10}}.
    # An entry holds for its scope's narrower forms too (`read` for `jarvis:read`), and a token gets the most any of
    # its scopes that reach a tool allows (codemode/limits.py).
    code_mode: bool = True
    code_mode_max_timeout: float = Field(default=120.0, gt=0)
    code_mode_roles: dict[str, CodeModeRole] = Field(default_factory=dict)
    project_root: Path = Field(default_factory=Path.cwd)
    # Where share tunnels keep Jarvis's own SSH key and the host keys a user trusted (`jarvis up`: <data dir>/tunnel).
    tunnel_dir: Path = Path("~/.jarvis/tunnel")
    # tool_find's dense retrieval: where tool vectors are kept (default ~/.cache/jarvis/discovery; the
    # built model graph goes to JARVIS_MODEL_CACHE, default ~/.cache/jarvis/models) and a switch to rank
    # lexically only.
    discovery_cache_dir: Path | None = None
    discovery_dense: bool = True
    redis_url: str = Field(default="", validation_alias=AliasChoices("JARVIS_REDIS_URL", "REDIS_URL"))
    # Sign-in for people (issue 31, decisions 0051, 0052): the team's OpenID provider, Jarvis being its client (the
    # provider's redirect URI is <public URL>/oauth/callback). No issuer, no sign-in: nothing of it is served.
    oidc_issuer: str = Field(default="", validation_alias=AliasChoices("JARVIS_OIDC_ISSUER"))
    oidc_client_id: str = Field(default="", validation_alias=AliasChoices("JARVIS_OIDC_CLIENT_ID"))
    oidc_client_secret: str = Field(default="", validation_alias=AliasChoices("JARVIS_OIDC_CLIENT_SECRET"), repr=False)
    oidc_client_secret_file: Path | None = Field(
        default=None, validation_alias=AliasChoices("JARVIS_OIDC_CLIENT_SECRET_FILE")
    )
    # The scopes asked of the provider: Google and Entra ID refuse `groups` (README "People sign in").
    oidc_scopes: str = Field(default="openid email profile groups", validation_alias=AliasChoices("JARVIS_OIDC_SCOPES"))
    # Where the provider puts a person's groups: a claim name or a dotted path (Keycloak's `realm_access.roles`), read
    # from the ID token and userinfo merged (README "People sign in" names each provider's).
    oidc_groups_claim: str = Field(default="groups", validation_alias=AliasChoices("JARVIS_OIDC_GROUPS_CLAIM"))
    # The access tokens' signing keys, shared by every worker and replica (a volume, a Secret). Unset: <data_dir>/
    # oauth-keys, so `jarvis up --data-dir D` keeps them in D with the rest of its state.
    oauth_keys_dir: Path | None = Field(default=None, validation_alias=AliasChoices("JARVIS_OAUTH_KEYS_DIR"))
    # Where this Jarvis keeps its state (`jarvis up` passes its --data-dir); only the keys' default is under it here.
    data_dir: Path = Path("~/.jarvis")
    # Client ID Metadata Documents may be served over plain http from a loopback address (local clients, tests).
    oauth_cimd_allow_loopback: bool = Field(
        default=False, validation_alias=AliasChoices("JARVIS_OAUTH_CIMD_ALLOW_LOOPBACK")
    )
    # Dynamic client registration (/oauth/register) per client address, per process: registrations a minute and the
    # burst allowed before that rate applies (0: no limit). A client registers once; a flood fills the registry.
    oauth_register_per_minute: float = Field(
        default=10.0, ge=0, validation_alias=AliasChoices("JARVIS_OAUTH_REGISTER_PER_MINUTE")
    )
    oauth_register_burst: int = Field(default=20, ge=1, validation_alias=AliasChoices("JARVIS_OAUTH_REGISTER_BURST"))
    # How long a person's access token lives. Short, because a JWT is checked without asking anyone: a revoked
    # grant or a disabled person still has this long with the token they hold (refresh tokens are refused at once).
    oauth_access_token_ttl_seconds: int = Field(
        default=300, ge=30, le=3600, validation_alias=AliasChoices("JARVIS_OAUTH_ACCESS_TOKEN_TTL_SECONDS")
    )
    docker_host: str = Field(
        default="unix:///var/run/docker.sock", validation_alias=AliasChoices("DOCKER_HOST", "JARVIS_DOCKER_HOST")
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_addresses(cls, value: str) -> str:
        """Each entry an address or a network, written as uvicorn parses it (it takes a malformed one for a name
        that never matches, silently)."""
        entries = []
        for entry in filter(None, (e.strip() for e in value.split(","))):
            try:
                parsed = ipaddress.ip_network(entry, strict=False) if "/" in entry else ipaddress.ip_address(entry)
            except ValueError:
                raise ValueError(f"JARVIS_TRUSTED_PROXIES: {entry!r} is neither an IP address nor a CIDR") from None
            entries.append(str(parsed))
        return ",".join(entries)

    @property
    def proxies(self) -> list[str]:
        """The trusted proxies, for uvicorn's forwarded_allow_ips; empty: forwarded headers are not read at all."""
        return self.trusted_proxies.split(",") if self.trusted_proxies else []

    @property
    def auth_required(self) -> bool:
        # Beyond loopback auth is not optional: an explicit require_auth=False is overridden.
        if not is_loopback(self.host):
            return True
        return bool(self.require_auth)

    @property
    def signing_keys_dir(self) -> Path:
        return (self.oauth_keys_dir or self.data_dir / "oauth-keys").expanduser()

    def oidc_secret(self) -> str:
        """The provider's client secret: the file wins over the variable; surrounding whitespace is dropped (a
        trailing newline in a Secret)."""
        if self.oidc_client_secret_file is not None:
            return self.oidc_client_secret_file.read_text().strip()
        return self.oidc_client_secret.strip()

    @property
    def metrics_token_required(self) -> bool:
        return self.auth_required if self.metrics_require_token is None else self.metrics_require_token

    def host_patterns(self) -> tuple[list[str], list[str]]:
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
        origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        if not is_loopback(self.host) and self.host not in ("0.0.0.0", "::"):  # noqa: S104 - comparing, not binding
            hosts += [self.host, f"{self.host}:*"]
        return hosts + self.allowed_hosts, origins + self.allowed_origins
