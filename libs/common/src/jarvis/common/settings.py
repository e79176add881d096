"""Settings shared by every process; each process declares one subclass with its own env prefix."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from jarvis.common import internal_plane as plane
from jarvis.common.internal_plane import InternalPlane


class ProcessSettings(BaseSettings):
    """What every Jarvis process reads: logging, where /metrics is served, and the internal plane's credentials.

    These keep one name (`JARVIS_LOG_LEVEL`, `JARVIS_INTERNAL_TOKEN`, …) whatever the subclass's prefix,
    so one env file configures every process alike.
    """

    model_config = SettingsConfigDict(env_prefix="JARVIS_", extra="ignore", validate_by_name=True)

    log_level: str = Field(default="INFO", validation_alias=AliasChoices("JARVIS_LOG_LEVEL"))
    log_json: bool = Field(default=True, validation_alias=AliasChoices("JARVIS_LOG_JSON"))
    # 0: no separate /metrics listener (the aggregator serves /metrics on its own port).
    metrics_port: int = Field(default=0, validation_alias=AliasChoices("JARVIS_METRICS_PORT"))
    # The service credential of the internal gRPC plane and its TLS material (see internal_plane.py).
    internal_token: str | None = Field(default=None, validation_alias=AliasChoices(plane.TOKEN), repr=False)
    internal_token_file: Path | None = Field(default=None, validation_alias=AliasChoices(plane.TOKEN_FILE))
    grpc_tls_cert: Path | None = Field(default=None, validation_alias=AliasChoices(plane.TLS_CERT))
    grpc_tls_key: Path | None = Field(default=None, validation_alias=AliasChoices(plane.TLS_KEY))
    grpc_tls_ca: Path | None = Field(default=None, validation_alias=AliasChoices(plane.TLS_CA))

    def internal_plane(self) -> InternalPlane:
        """The credential and TLS material these settings name, read now (a bad path is a PlaneConfigError)."""
        return plane.load_plane(self.internal_token, self.internal_token_file, self.grpc_tls_cert,
                                self.grpc_tls_key, self.grpc_tls_ca)
