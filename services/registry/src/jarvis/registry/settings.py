"""Settings of the registry process (env prefix JARVIS_REGISTRY_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from jarvis.common.roots import parse_roots
from jarvis.common.settings import ProcessSettings


class RegistrySettings(ProcessSettings):
    """Where the registry keeps its data and where it listens."""

    model_config = SettingsConfigDict(env_prefix="JARVIS_REGISTRY_", extra="ignore", validate_by_name=True)

    data_dir: Path = Field(default=Path("~/.jarvis"), description="Jarvis data directory (config.json, SQLite).")
    # The plain DATABASE_URL is what CI and container platforms set; the prefixed name wins when both exist.
    database_url: str = Field(
        default="",
        validation_alias=AliasChoices("JARVIS_REGISTRY_DATABASE_URL", "DATABASE_URL"),
        description="SQLAlchemy URL; empty means SQLite at <data_dir>/registry.db.",
    )
    listen: str = Field(default="127.0.0.1:0", description="gRPC listen address (host:port or unix:path).")
    aggregator_url: str = Field(
        default="",
        description="URL the aggregator in front of this registry serves: the "
        "default of the aggregator_url setting client configs and shares point at.",
    )
    # The token vault's Fernet keys (issue 32), comma-separated, newest first; or a file of them. Neither given:
    # <data_dir>/vault.key is created, owner-only.
    vault_key: SecretStr = Field(default=SecretStr(""), description="Fernet key(s) sealing the token vault.")
    vault_key_file: Path | None = None
    home: Path = Field(default=Path("~"), description="Home directory whose MCP client configs are managed.")
    project_roots: list[Path] = Field(
        default_factory=list,
        validation_alias=AliasChoices("JARVIS_REGISTRY_PROJECT_ROOTS", "JARVIS_PROJECT_ROOTS", "project_roots"),
        description="Directories project analysis, diff and profile suggestions may read (JSON list); "
        "default: the home directory.",
    )

    @field_validator("project_roots", mode="before")
    @classmethod
    def _roots(cls, value: object) -> list[Path]:
        return parse_roots(value)

    @model_validator(mode="after")
    def _resolve_paths(self) -> RegistrySettings:
        self.data_dir = self.data_dir.expanduser()
        self.home = self.home.expanduser()
        if not self.project_roots:
            self.project_roots = [self.home]
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'registry.db'}"
        self.database_url = self.with_database_password(self.database_url)
        return self

    @property
    def config_path(self) -> Path:
        return self.data_dir / "config.json"
