"""Settings shared by every process; each process declares one subclass with its own env prefix."""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ProcessSettings(BaseSettings):
    """What every Jarvis process reads: logging and where /metrics is served.

    These keep one name (`JARVIS_LOG_LEVEL`, …) whatever the subclass's prefix, so one env file
    configures every process alike.
    """

    model_config = SettingsConfigDict(env_prefix="JARVIS_", extra="ignore", validate_by_name=True)

    log_level: str = Field(default="INFO", validation_alias=AliasChoices("JARVIS_LOG_LEVEL"))
    log_json: bool = Field(default=True, validation_alias=AliasChoices("JARVIS_LOG_JSON"))
    # 0: no separate /metrics listener (the aggregator serves /metrics on its own port).
    metrics_port: int = Field(default=0, validation_alias=AliasChoices("JARVIS_METRICS_PORT"))
