"""Settings of the debug process (env prefix JARVIS_DEBUG_).

Backend credentials (AWS_*, LANGSMITH_*, JIRA_*) are deliberately not settings: each backend reads
them when a tool is called, so they can be added without a restart and never sit in a model dump.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from jarvis.common.settings import ProcessSettings


class DebugSettings(ProcessSettings):
    """Where the debug service listens and how its backends reach their services."""

    model_config = SettingsConfigDict(env_prefix="JARVIS_DEBUG_", extra="ignore", validate_by_name=True)

    listen: str = Field(default="127.0.0.1:0", description="gRPC listen address (host:port or unix:path).")
    credentials_file: Path | None = Field(
        default=None,
        description="Optional dotenv file with backend credentials (JIRA_API_TOKEN=…), read on every call; "
        "the process environment wins over it.",
    )
    aws_endpoint_url: str = Field(
        default="", description="One endpoint for every AWS call (LocalStack, moto); empty: AWS itself."
    )
    aws_region: str = Field(default="", description="AWS region when neither the call nor AWS_REGION names one.")
    timeout_seconds: float = Field(default=20.0, description="Bound on one call to AWS, LangSmith or Jira.")
