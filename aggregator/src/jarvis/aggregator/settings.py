"""Settings of the aggregator process (env prefix JARVIS_AGGREGATOR_)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import AliasChoices, BaseModel, Field
from pydantic_settings import SettingsConfigDict

from jarvis.common.settings import ProcessSettings

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RateLimitSetting(BaseModel):
    per_second: float = 0.0
    burst: int = 0
    concurrent: int = 0


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
    # profiles' where the answer is a JSON body (downstream/direct.py); and requests to streamable-HTTP servers
    # sent without the SDK's client (downstream/http_calls.py). The same answers for less CPU. Off: every
    # request goes through the SDK, as a check of that claim.
    direct_tool_calls: bool = True
    # How long hot registry reads (the server list) are served from the aggregator's cache.
    read_cache_seconds: float = 2.0
    # None: decided by the bind address (required beyond loopback, optional on loopback).
    require_auth: bool | None = None
    # Extra Host header values accepted beyond loopback (e.g. "jarvis.example.com", "10.0.0.5:8765").
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    max_body_bytes: int = 1024 * 1024
    # Downstream MCP servers: time to finish initialize, the default deadline of a proxied call, the
    # largest message a stdio server may send, and how often the registry is re-read for changes.
    downstream_init_timeout: float = 30.0
    downstream_call_timeout: float = 300.0
    downstream_max_message_bytes: int = 8 * 1024 * 1024
    downstream_watch_seconds: float = 2.0
    token_cache_seconds: float = 5.0
    # Open MCP sessions one token may hold on this replica (0: no cap); the local user is not capped.
    max_sessions_per_token: int = 200
    # Per token and tool, per replica: calls per second (0: off), the burst allowed before that rate
    # applies, and calls in flight (0: off). `rate_limit_tools` overrides them for named tools, as JSON:
    # {"jarvis_project": {"per_second": 1, "burst": 2, "concurrent": 1}}.
    rate_limit_per_second: float = 20.0
    rate_limit_burst: int = 40
    rate_limit_concurrent: int = 8
    rate_limit_tools: dict[str, RateLimitSetting] = Field(default_factory=dict)
    project_root: Path = Field(default_factory=Path.cwd)
    # Where share tunnels keep Jarvis's own SSH key and the host keys a user trusted (`jarvis up`: <data dir>/tunnel).
    tunnel_dir: Path = Path("~/.jarvis/tunnel")
    # tool_find's dense retrieval: where tool vectors are kept (default ~/.cache/jarvis/discovery; the
    # built model graph goes to JARVIS_MODEL_CACHE, default ~/.cache/jarvis/models) and a switch to rank
    # lexically only.
    discovery_cache_dir: Path | None = None
    discovery_dense: bool = True
    redis_url: str = Field(default="", validation_alias=AliasChoices("JARVIS_REDIS_URL", "REDIS_URL"))
    docker_host: str = Field(
        default="unix:///var/run/docker.sock", validation_alias=AliasChoices("DOCKER_HOST", "JARVIS_DOCKER_HOST")
    )

    @property
    def auth_required(self) -> bool:
        # Beyond loopback auth is not optional: an explicit require_auth=False is overridden.
        if not is_loopback(self.host):
            return True
        return bool(self.require_auth)

    def host_patterns(self) -> tuple[list[str], list[str]]:
        hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]"]
        origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        if not is_loopback(self.host) and self.host not in ("0.0.0.0", "::"):  # noqa: S104 - comparing, not binding
            hosts += [self.host, f"{self.host}:*"]
        return hosts + self.allowed_hosts, origins + self.allowed_origins
