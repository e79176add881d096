"""The internal plane's credentials: the service credential every gRPC call carries, and optional TLS.

One deployment, one random secret: every service checks it on every call (health checks excepted, so
probes need nothing) and every client sends it as `authorization: Bearer <secret>`. TLS is on when a
server is given a certificate and key; a server also given a CA asks its callers for certificates
signed by it (mutual TLS); a client given a CA speaks TLS and trusts only that CA.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis.common import addresses
from jarvis.common.errors import FailedPrecondition

if TYPE_CHECKING:  # grpc is imported by the methods that make credentials: settings alone do not load it
    import grpc

# Names of settings, not secrets.
TOKEN = "JARVIS_INTERNAL_TOKEN"  # noqa: S105
TOKEN_FILE = "JARVIS_INTERNAL_TOKEN_FILE"  # noqa: S105
TLS_CERT = "JARVIS_GRPC_TLS_CERT"
TLS_KEY = "JARVIS_GRPC_TLS_KEY"
TLS_CA = "JARVIS_GRPC_TLS_CA"

AUTH_HEADER = "authorization"
# Set on a refusal by the internal plane, so a client can tell "this process lacks the service
# credential" from a domain UNAUTHENTICATED (an MCP token the registry does not know).
REFUSED_MARKER = ("jarvis-internal-plane", "refused")
TOKEN_FILE_NAME = "internal.token"  # noqa: S105 - a file name


class PlaneConfigError(FailedPrecondition):
    """A setting of the internal plane is missing or unusable; the message names the setting to fix."""


@dataclass(frozen=True, repr=False)
class InternalPlane:
    """What a process needs to serve or call the internal plane. Secrets never appear in its repr."""

    token: str | None = None
    tls_cert: bytes | None = None
    tls_key: bytes | None = None
    tls_ca: bytes | None = None

    def __repr__(self) -> str:
        return (
            f"InternalPlane(token={'set' if self.token else 'unset'}, tls={self.serves_tls}, "
            f"ca={self.tls_ca is not None})"
        )

    @property
    def serves_tls(self) -> bool:
        return self.tls_cert is not None and self.tls_key is not None

    def with_token(self, token: str) -> InternalPlane:
        return InternalPlane(token, self.tls_cert, self.tls_key, self.tls_ca)

    def server_credentials(self) -> grpc.ServerCredentials | None:
        if self.tls_key is None or self.tls_cert is None:
            return None
        import grpc

        return grpc.ssl_server_credentials(
            [(self.tls_key, self.tls_cert)], root_certificates=self.tls_ca, require_client_auth=self.tls_ca is not None
        )

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        """TLS toward servers signed by the CA (presenting this process's certificate when it has one)."""
        if self.tls_ca is None:
            return None
        import grpc

        return grpc.ssl_channel_credentials(
            root_certificates=self.tls_ca, private_key=self.tls_key, certificate_chain=self.tls_cert
        )

    def metadata(self) -> tuple[tuple[str, str], ...]:
        return ((AUTH_HEADER, f"Bearer {self.token}"),) if self.token else ()

    def check_listen(self, address: str) -> None:
        """Refuse to serve beyond loopback without a credential: anything reaching the port could mint tokens."""
        if self.token is None and not is_local_address(address):
            raise PlaneConfigError(
                f"refusing to listen on {address} without a service credential: anything that reaches this "
                f"port could call every method (mint admin tokens included). Set {TOKEN} (or {TOKEN_FILE}) to "
                f"the deployment's shared secret on every Jarvis process, e.g. `openssl rand -hex 32`"
            )


def is_local_address(address: str) -> bool:
    """True for loopback host:port addresses and unix sockets."""
    if address.startswith("unix:"):
        return True
    host = address.rpartition(":")[0].strip("[]") if ":" in address else address
    if host == "localhost":
        return True
    try:
        return addresses.is_loopback(ipaddress.ip_address(host))
    except ValueError:
        return False


def load_plane(
    token: str | None, token_file: Path | None, cert: Path | None, key: Path | None, ca: Path | None
) -> InternalPlane:
    """The plane from its settings: the token file wins over the token; whitespace around either is dropped."""
    secret = _read_text(token_file, TOKEN_FILE).strip() if token_file is not None else (token or "").strip()
    if (token_file is not None or token) and not secret:
        raise PlaneConfigError(
            f"{TOKEN_FILE if token_file is not None else TOKEN} is empty; give it the "
            "deployment's service credential or unset it"
        )
    if (cert is None) != (key is None):
        missing = TLS_KEY if key is None else TLS_CERT
        raise PlaneConfigError(f"{TLS_CERT} and {TLS_KEY} go together: set {missing} too")
    return InternalPlane(
        token=secret or None,
        tls_cert=_read_bytes(cert, TLS_CERT) if cert is not None else None,
        tls_key=_read_bytes(key, TLS_KEY) if key is not None else None,
        tls_ca=_read_bytes(ca, TLS_CA) if ca is not None else None,
    )


def local_token(data_dir: Path) -> str:
    """The credential of a laptop's `jarvis up`: made once in the data dir, readable by its owner only."""
    path = data_dir / TOKEN_FILE_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        existing = _read_text(path, TOKEN_FILE).strip()
        if existing:
            return existing
        # An empty file (a crash between create and write): replace it, still owner-only.
        path.unlink()
        return local_token(data_dir)
    with os.fdopen(fd, "w") as out:
        secret = secrets.token_hex(32)
        out.write(secret + "\n")
    return secret


def _read_bytes(path: Path, setting: str) -> bytes:
    try:
        return path.expanduser().read_bytes()
    except OSError as exc:
        raise PlaneConfigError(
            f"{setting}: cannot read {path} ({exc.strerror or exc.__class__.__name__}); fix the path or unset it"
        ) from None


def _read_text(path: Path, setting: str) -> str:
    try:
        return _read_bytes(path, setting).decode()
    except UnicodeDecodeError:
        raise PlaneConfigError(f"{setting}: {path} is not text; it should hold the secret alone") from None
