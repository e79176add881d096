"""The signing keys of Jarvis's access tokens: PEM files in one directory that every worker and replica shares.

The directory is the unit of sharing (a volume, a Kubernetes Secret): whatever is in it signs and verifies, so a key
made or rotated on one replica is used by the others at their next look (a cheap mtime check per call). The newest
file signs (a rotated one by the time in its name, so a Secret rewritten whole keeps the order); every file verifies
and is published in the JWKS until `prune` removes it, so tokens signed before a rotation stay valid until they
expire. RS256 through joserfc: no JWT or crypto code of our own. See
docs/decisions/0052-oauth-signing-keys.md.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, RSAKey

ALGORITHM = "RS256"
_SUFFIX = ".pem"
_FIRST = "signing-key.pem"  # the name the first key gets (the authorization server's early keys used it too)


class InvalidToken(Exception):
    """A token that does not verify; the message says why (safe to show: it never contains the token)."""


class SigningKeys:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._seen: float = -1.0
        self._keys: list[tuple[float, RSAKey]] = []  # (when written, key), oldest first
        self._set = KeySet([])

    @classmethod
    def load(cls, directory: Path) -> SigningKeys:
        """The keys in `directory`, which is made (owner-only) with a first key when it holds none."""
        keys = cls(directory.expanduser())
        try:
            keys.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not any(keys.directory.glob(f"*{_SUFFIX}")):
                keys._write(_FIRST)
        except OSError as exc:
            raise OSError(
                f"no signing key in {keys.directory} and none can be made there ({exc.strerror}): mount it writable, "
                "or put a key in it (`JARVIS_OAUTH_KEYS_DIR=<a copy> jarvis oauth-keys rotate`, then the copy's "
                "key-*.pem into the Secret)"
            ) from exc
        keys._reload()
        return keys

    def sign(self, claims: dict[str, Any]) -> str:
        key = self._current()[-1][1]
        return jwt.encode({"alg": ALGORITHM, "kid": key.kid, "typ": "at+jwt"}, claims, key)

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of `token` if a key of the set signed it (found by the header's kid)."""
        self._current()
        try:
            return dict(jwt.decode(token, self._set, algorithms=[ALGORITHM]).claims)
        except (JoseError, ValueError) as exc:
            raise InvalidToken(f"bad signature or malformed token ({type(exc).__name__})") from None

    def jwks(self) -> dict[str, Any]:
        return {"keys": [{**k.as_dict(private=False), "use": "sig", "alg": ALGORITHM} for _, k in self._current()]}

    def listing(self) -> list[tuple[str, float]]:
        """(kid, when the key file was written), oldest first; the last one signs."""
        return [(key.kid or "", mtime) for mtime, key in self._current(force=True)]

    def rotate(self) -> str:
        """A new newest key (it signs from now on); the others keep verifying until pruned. Returns its kid."""
        self._write(f"key-{time.time_ns()}{_SUFFIX}")
        return self._current(force=True)[-1][1].kid or ""

    def prune(self, max_age: float) -> list[str]:
        """Removes keys older than `max_age` seconds, never the newest; returns the removed kids.

        Give it at least the access-token lifetime: a token outlives nothing it was signed with."""
        keys = self._current(force=True)
        cutoff = time.time() - max_age
        removed = []
        for path in sorted(self.directory.glob(f"*{_SUFFIX}"), key=_written)[:-1]:
            if path.stat().st_mtime < cutoff:
                kid = _read(path).kid
                path.unlink(missing_ok=True)
                removed.append(kid or "")
        if removed or not keys:
            self._current(force=True)
        return removed

    def _current(self, force: bool = False) -> list[tuple[float, RSAKey]]:
        try:
            mtime = self.directory.stat().st_mtime
        except FileNotFoundError:
            mtime = -2.0
        if force or mtime != self._seen:
            self._seen = mtime
            self._reload()
        if not self._keys:
            raise InvalidToken(f"no signing key in {self.directory}")
        return self._keys

    def _reload(self) -> None:
        found = []
        for path in self.directory.glob(f"*{_SUFFIX}"):
            try:
                found.append((_written(path), _read(path)))
            except (OSError, ValueError, JoseError):
                continue  # removed by a prune on another replica while we listed, or not a key: skip it
        found.sort(key=lambda pair: pair[0])
        self._keys = [(written, key) for (_, written), key in found]
        self._set = KeySet([k for _, k in found])

    def _write(self, name: str) -> None:
        # Written whole under another name, then linked into place: workers starting together all read the one key
        # that won, never a half-written file.
        path = self.directory / name
        draft = path.with_name(f".{name}.{uuid.uuid4().hex}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(RSAKey.generate_key(2048, private=True).as_pem(private=True))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()


def _written(path: Path) -> tuple[int, float]:
    """Where a key stands in time, oldest first: a rotated key (`key-<ns>.pem`) by the time in its name, after every
    other key, which goes by its mtime. Names, not mtimes, order rotated keys so that a directory whose files are
    all rewritten at once (a Kubernetes Secret, a copy) still signs with the newest key."""
    stamp = path.name.removeprefix("key-").removesuffix(_SUFFIX)
    if path.name.startswith("key-") and stamp.isdigit():
        return 1, int(stamp) / 1e9
    return 0, path.stat().st_mtime


def _read(path: Path) -> RSAKey:
    key = RSAKey.import_key(path.read_bytes())
    key.ensure_kid()
    return key
