"""The settings of embedded Jarvis (`jarvis up`, and the data dir every admin command opens).

Apart from the stack (embedded.py) so that a command reading one record loads pydantic-settings only: each
service's settings class is imported by the method that builds it, when `jarvis up` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from jarvis.common.settings import ProcessSettings

if TYPE_CHECKING:
    from jarvis.aggregator.settings import AggregatorSettings
    from jarvis.debug.settings import DebugSettings
    from jarvis.registry.settings import RegistrySettings
    from jarvis.runtime.settings import RuntimeSettings
    from jarvis.scheduler.settings import SchedulerSettings


class EmbeddedSettings(ProcessSettings):
    """Settings of `jarvis up` (env prefix JARVIS_); command-line options override them."""

    model_config = SettingsConfigDict(env_prefix="JARVIS_", extra="ignore")

    data_dir: Path = Path("~/.jarvis")
    host: str = "127.0.0.1"
    port: int = 8765
    registry_port: int = 0
    stateless: bool = False
    workers: int = Field(default=1, ge=0)  # aggregator processes on the port (0: one per core)
    require_auth: bool | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    database_url: str = Field(default="", validation_alias=AliasChoices("JARVIS_DATABASE_URL", "DATABASE_URL"))
    log_json: bool = False

    def use_local_token(self) -> None:
        """Give the internal plane a credential when none is configured: the embedded services listen on
        loopback only, yet any local user could reach their ports and mint tokens. The one made in the
        data dir (owner-only) also lets `jarvis --registry` reach this registry."""
        if self.internal_plane().token is None:
            self.resolved_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            from jarvis.common.internal_plane import local_token

            self.internal_token = local_token(self.resolved_data_dir)

    @property
    def plane_values(self) -> dict[str, Any]:
        """The credential settings every embedded service and client is given (TLS comes from the environment)."""
        return {"internal_token": self.internal_token, "internal_token_file": self.internal_token_file}

    def registry_settings(self) -> RegistrySettings:
        from jarvis.registry.settings import RegistrySettings

        values: dict[str, Any] = {
            "data_dir": self.resolved_data_dir,
            "listen": f"127.0.0.1:{self.registry_port}",
            "aggregator_url": self.served_url,
            **self.plane_values,
        }
        if self.database_url:
            values["database_url"] = self.database_url
        return RegistrySettings(**values)

    @property
    def served_url(self) -> str:
        """Where `jarvis up` serves MCP (what its banner prints)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host  # noqa: S104 - comparing
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    def aggregator_settings(
        self, registry_target: str, debug_target: str = "", runtime_target: str = "", scheduler_target: str = ""
    ) -> AggregatorSettings:
        from jarvis.aggregator.settings import AggregatorSettings

        return AggregatorSettings(
            host=self.host,
            port=self.port,
            registry_target=registry_target,
            stateless=self.stateless,
            workers=self.workers,
            log_level=self.log_level,  # worker processes log as the main one does
            log_json=self.log_json,
            require_auth=self.require_auth,
            allowed_hosts=self.allowed_hosts,
            debug_target=debug_target,
            runtime_target=runtime_target,
            scheduler_target=scheduler_target,
            **self.plane_values,
            tunnel_dir=self.resolved_data_dir / "tunnel",
            discovery_cache_dir=self.resolved_data_dir / "discovery",
            data_dir=self.resolved_data_dir,  # sign-in's keys: <data dir>/oauth-keys unless JARVIS_OAUTH_KEYS_DIR
        )

    def scheduler_settings(self, runtime_target: str, registry_target: str = "") -> SchedulerSettings:
        """Embedded scheduling never needs Redis: an in-process timer fires schedules; JARVIS_SCHEDULER_* apply."""
        from jarvis.scheduler.settings import SchedulerSettings

        data_dir = self.resolved_data_dir / "scheduler"
        return SchedulerSettings(
            data_dir=data_dir,
            listen="127.0.0.1:0",
            runtime_target=runtime_target,
            registry_target=registry_target,  # runs of a person's schedule act for them (decision 0057)
            redis_url="",
            database_url=self.database_url or f"sqlite:///{data_dir / 'scheduler.db'}",
            **self.plane_values,
        )

    def runtime_settings(self) -> RuntimeSettings:
        """The runtime keeps its own database and project trees under <data dir>/runtime; JARVIS_RUNTIME_* apply.

        Without JARVIS_RUNTIME_SECRETS_KEY(_FILE), the key sealing project secrets is created there (0600).
        """
        from jarvis.runtime.settings import RuntimeSettings

        data_dir = self.resolved_data_dir / "runtime"
        return RuntimeSettings(
            data_dir=data_dir,
            listen="127.0.0.1:0",
            secrets_key_create=True,
            database_url=self.database_url or f"sqlite:///{data_dir / 'runtime.db'}",
            **self.plane_values,
        )

    def debug_settings(self) -> DebugSettings:
        """JARVIS_DEBUG_* still apply; credentials may also go in <data dir>/debug.env, read on every call."""
        from jarvis.debug.settings import DebugSettings

        settings = DebugSettings(listen="127.0.0.1:0", **self.plane_values)
        if settings.credentials_file is None:
            settings.credentials_file = self.resolved_data_dir / "debug.env"
        return settings

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir.expanduser().resolve()


def settings_for(data_dir: str | None, **overrides: Any) -> EmbeddedSettings:
    """The embedded settings of a command: the environment's, `--data-dir` and the options given (None: not given)."""
    values = {k: v for k, v in overrides.items() if v is not None}
    if data_dir:
        values["data_dir"] = Path(data_dir)
    return EmbeddedSettings(**values)
