"""Fernet keys for data sealed at rest, managed as project secrets' are (services/runtime/.../domain/secrets.py):
given in a setting, read from a file, or (embedded Jarvis) created owner-only in the data dir. Rotatable: several
keys may be given, comma-separated, newest first; data is sealed with the first and opened with any of them, and
`MultiFernet.rotate` re-seals old data under the first. `seal` also seals the owner and name a value belongs to, so
a ciphertext copied to another owner or name in a database does not open there (`unseal` refuses it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from jarvis.common.errors import FailedPrecondition


class KeyMissing(FailedPrecondition):
    """A process that seals data was started without its key (a deployment error)."""


class Unsealable(Exception):
    """A sealed value that does not open: under none of the keys (`key`), or sealed for another owner or name."""

    def __init__(self, reason: Literal["key", "owner"]) -> None:
        super().__init__(reason)
        self.reason = reason


def seal(keys: MultiFernet, owner: str, name: str, value: str) -> str:
    """`value` sealed under the newest key together with the `owner` and `name` it belongs to (neither holds NUL)."""
    return keys.encrypt(f"{owner}\0{name}\0{value}".encode()).decode()


def unseal(keys: MultiFernet, sealed: str, owner: str, name: str) -> str:
    """The value `seal` sealed for `owner` and `name`; Unsealable when no key opens it or it is another's."""
    try:
        plain = keys.decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise Unsealable("key") from None
    sealed_owner, _, rest = plain.partition("\0")
    sealed_name, _, value = rest.partition("\0")
    if sealed_owner != owner or sealed_name != name:
        raise Unsealable("owner")
    return value


def load_keys(keys: str, key_file: Path | None, create_in: Path | None, *, setting: str, file_name: str) -> MultiFernet:
    """The keys, newest first: from `keys` (setting `setting`), else `key_file`, else created in `create_in`."""
    if keys.strip():
        return _fernet(keys, setting)
    if key_file is not None:
        try:
            return _fernet(key_file.read_text(), str(key_file))
        except OSError as exc:
            raise KeyMissing(f"cannot read the key file {key_file} ({exc.strerror}); fix {setting}_FILE") from exc
    if create_in is None:
        raise KeyMissing(
            f'set {setting} (or {setting}_FILE) to a Fernet key, e.g. the output of `python -c "from '
            'cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`, and keep it: data sealed '
            "under one key cannot be opened with another (to rotate, put the new key first, comma-separated)"
        )
    create_in.mkdir(parents=True, exist_ok=True)
    path = create_in / file_name
    try:
        # O_EXCL: two processes starting at once never write two different keys.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _fernet(path.read_text(), str(path))
    with os.fdopen(fd, "wb") as out:
        out.write(Fernet.generate_key())
    return _fernet(path.read_text(), str(path))


def _fernet(text: str, source: str) -> MultiFernet:
    parts = [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]
    try:
        return MultiFernet([Fernet(part.encode()) for part in parts])
    except (ValueError, TypeError) as exc:
        raise KeyMissing(
            f"the key from {source} is not a Fernet key (32 url-safe base64-encoded bytes; several: "
            "comma-separated, newest first); generate one with Fernet.generate_key()"
        ) from exc
