"""Settings shared by every process; each process declares one subclass with its own env prefix."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, ValidationError
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
    # A deployment keeps the database password in a secret file (compose secret, Kubernetes Secret) and the URL
    # without it, so the password is never repeated in URLs, env files or process listings.
    database_password_file: Path | None = Field(
        default=None, validation_alias=AliasChoices("JARVIS_DATABASE_PASSWORD_FILE", "DATABASE_PASSWORD_FILE")
    )

    def with_database_password(self, url: str) -> str:
        """`url` with the password read from `database_password_file` (if set); a clear error when it cannot be."""
        if self.database_password_file is None or not url or url.startswith("sqlite"):
            return url  # SQLite has no password
        # Imported here: every process reads these settings, and a command that opens no database should not pay
        # for SQLAlchemy.
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            parsed = make_url(url)
        except ArgumentError:
            raise ValueError(
                "the database URL is not a valid SQLAlchemy URL (e.g. postgresql://user@host:5432/db)"
            ) from None
        if parsed.password:
            raise ValueError(
                "the database URL already has a password and DATABASE_PASSWORD_FILE is set too: "
                "remove the password from the URL"
            )
        try:
            password = self.database_password_file.read_text().rstrip("\r\n")
        except OSError as exc:
            raise ValueError(
                f"DATABASE_PASSWORD_FILE={self.database_password_file} cannot be read "
                f"({exc.strerror}): mount the database password secret there, or unset it"
            ) from None
        if not password:
            raise ValueError(
                f"DATABASE_PASSWORD_FILE={self.database_password_file} is empty: write the database password into it"
            )
        return parsed.set(password=password).render_as_string(hide_password=False)

    def internal_plane(self) -> InternalPlane:
        """The credential and TLS material these settings name, read now (a bad path is a PlaneConfigError)."""
        return plane.load_plane(
            self.internal_token, self.internal_token_file, self.grpc_tls_cert, self.grpc_tls_key, self.grpc_tls_ca
        )


def describe_invalid_settings(exc: ValidationError) -> str:
    """What is wrong with the settings, one line each, without the values given (they may hold secrets)."""
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}" if where else message)
    return "invalid settings: " + "; ".join(problems)
