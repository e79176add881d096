"""Per-project secrets (model API keys, tokens): encrypted at rest, write-only, given only to that project's agents.

Values are sealed with Fernet (AES-128-CBC + HMAC-SHA256) under a key the deployment provides
(`JARVIS_RUNTIME_SECRETS_KEY` or `_FILE`; several, comma-separated and newest first, to rotate; managed as
jarvis.common.fernet_keys manages every sealing key); embedded Jarvis creates one in its data dir, readable by
its owner only. Each ciphertext also seals the project and name it belongs to, so a row copied to
another project or name in the database does not decrypt there. Nothing reads a value back out:
the only way out is the environment of the project's agent sessions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cryptography.fernet import MultiFernet
from sqlalchemy import select

from jarvis.common.errors import FailedPrecondition, InvalidArgument, NotFound
from jarvis.common.fernet_keys import Unsealable, load_keys, seal, unseal
from jarvis.common.sql.database import Database
from jarvis.common.sql.types import utcnow
from jarvis.runtime.domain.rows import project_row
from jarvis.runtime.storage.models import SecretRow

MAX_VALUE_BYTES = 64 * 1024
MAX_SECRETS = 100
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
RESERVED = ("HOME", "PATH")
RESERVED_PREFIX = "JARVIS_"
KEY_FILE = "secrets.key"


def load_key(key: str, key_file: Path | None, create_in: Path | None) -> MultiFernet:
    """The keys (newest first): given, read from a file, or (embedded: `create_in`) created there owner-only."""
    return load_keys(key, key_file, create_in, setting="JARVIS_RUNTIME_SECRETS_KEY", file_name=KEY_FILE)


@dataclass(frozen=True)
class SecretInfo:
    name: str
    created_at: datetime
    updated_at: datetime


def check_secret_name(name: str, what: str = "secret name") -> str:
    name = (name or "").strip()
    if not _NAME.match(name):
        raise InvalidArgument(
            f"invalid {what} '{name[:60]}': use an environment variable name (letters, digits "
            "and '_', not starting with a digit)"
        )
    if name in RESERVED or name.startswith(RESERVED_PREFIX):
        raise InvalidArgument(f"{what} '{name}' is reserved (HOME, PATH and JARVIS_* are set by Jarvis)")
    return name


class Secrets:
    def __init__(self, db: Database, keys: MultiFernet) -> None:
        self._db = db
        self._fernet = keys

    def set(self, project_id: str, name: str, value: str) -> SecretInfo:
        """Store (or replace) a secret; the answer never carries the value."""
        name = check_secret_name(name)
        if not value or len(value.encode()) > MAX_VALUE_BYTES or "\x00" in value:
            raise InvalidArgument(f"the value of secret {name} must be 1 to {MAX_VALUE_BYTES} bytes without NUL")
        token = seal(self._fernet, project_id, name, value)
        now = utcnow()
        with self._db.write() as session:
            project_row(session, project_id)
            row = session.get(SecretRow, (project_id, name))
            if row is None:
                count = len(session.scalars(select(SecretRow.name).where(SecretRow.project_id == project_id)).all())
                if count >= MAX_SECRETS:
                    raise FailedPrecondition(
                        f"project {project_id} already has {MAX_SECRETS} secrets; delete one "
                        "with project action=secret_delete"
                    )
                row = SecretRow(project_id=project_id, name=name, ciphertext=token, created_at=now, updated_at=now)
                session.add(row)
            else:
                row.ciphertext, row.updated_at = token, now
            return SecretInfo(row.name, row.created_at, row.updated_at)

    def list(self, project_id: str) -> list[SecretInfo]:
        with self._db.read() as session:
            project_row(session, project_id)
            rows = session.scalars(
                select(SecretRow).where(SecretRow.project_id == project_id).order_by(SecretRow.name)
            ).all()
            return [SecretInfo(r.name, r.created_at, r.updated_at) for r in rows]

    def delete(self, project_id: str, name: str) -> SecretInfo:
        with self._db.write() as session:
            project_row(session, project_id)
            row = session.get(SecretRow, (project_id, (name or "").strip()))
            if row is None:
                raise NotFound(
                    f"project {project_id} has no secret named '{(name or '')[:60]}'; "
                    "project action=secret_list shows the names"
                )
            info = SecretInfo(row.name, row.created_at, row.updated_at)
            session.delete(row)
        return info

    def environment(self, project_id: str, overrides: Mapping[str, str]) -> dict[str, str]:
        """The project's secrets as environment variables, with `overrides` (variable -> secret name) applied.

        An override points a variable at another of the project's secrets (a schedule's own API key, say).
        """
        with self._db.read() as session:
            rows = session.scalars(select(SecretRow).where(SecretRow.project_id == project_id)).all()
            sealed = {r.name: r.ciphertext for r in rows}
        values = {name: self._open(project_id, name, token) for name, token in sealed.items()}
        env = dict(values)
        for variable, secret in overrides.items():
            variable = check_secret_name(variable, "override variable")
            if secret not in values:
                raise FailedPrecondition(
                    f"the override {variable}={secret[:60]} names a secret project {project_id} does not have; "
                    "store it with project action=secret_set or change the override (secret_list shows the names)"
                )
            env[variable] = values[secret]
        return env

    def _open(self, project_id: str, name: str, token: str) -> str:
        try:
            return unseal(self._fernet, token, project_id, name)
        except Unsealable as exc:
            if exc.reason == "key":
                raise FailedPrecondition(
                    f"secret {name} of project {project_id} cannot be decrypted with this runtime's "
                    "key (was JARVIS_RUNTIME_SECRETS_KEY changed?); store it again with "
                    "project action=secret_set"
                ) from None
            raise FailedPrecondition(
                f"secret {name} of project {project_id} was sealed for another project or name; "
                "store it again with project action=secret_set"
            ) from None
