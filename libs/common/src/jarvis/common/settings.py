"""Settings shared by every process; each process declares one subclass with its own env prefix."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class ProcessSettings(BaseSettings):
    """What every Jarvis process reads: logging and where /metrics is served."""

    model_config = SettingsConfigDict(env_prefix="JARVIS_", extra="ignore")

    log_level: str = "INFO"
    log_json: bool = True
    metrics_port: int = 0  # 0: no separate /metrics listener (the aggregator serves its own)
