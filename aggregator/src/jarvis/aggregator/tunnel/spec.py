"""What a user names for a share's tunnel: `ssh://user@host[:port]`, a remote port, and the host's key.

Every value here ends up in the argv of `ssh`, so each is checked against a strict pattern: a user
or host starting with `-` would be read as an option (`-oProxyCommand=...` runs a command).
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from jarvis.common.errors import InvalidArgument

NONE = "none"
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$")
_KEY_TYPE = re.compile(
    r"^(ssh-ed25519|ssh-rsa|rsa-sha2-256|rsa-sha2-512|ecdsa-sha2-nistp(256|384|521)|"
    r"sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com)$"
)
_EXAMPLE = "ssh://user@host.example.com:22"


@dataclass(frozen=True)
class SshTarget:
    user: str
    host: str  # a name or an IP address, IPv6 without brackets
    port: int

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}"

    @property
    def known_hosts_name(self) -> str:
        """How OpenSSH names this host in known_hosts (`[host]:port` off port 22)."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    def __str__(self) -> str:
        return f"ssh://{self.user}@{self.url_host}:{self.port}"


def parse_target(text: str) -> SshTarget | None:
    """`ssh://user@host[:port]`; None for `none` (the share stays on Jarvis's own listener)."""
    text = text.strip()
    if text.lower() in ("", NONE):
        return None
    try:
        parts = urlsplit(text)
        port = parts.port or 22
    except ValueError:
        raise InvalidArgument(f"tunnel: the port is not a number 1-65535; write it as {_EXAMPLE}") from None
    if parts.scheme != "ssh":
        raise InvalidArgument(f"tunnel must be 'none' or an OpenSSH address such as {_EXAMPLE}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.password:
        raise InvalidArgument(f"tunnel takes only a user, a host and a port, as in {_EXAMPLE}")
    user, host = parts.username or "", parts.hostname or ""
    if not _USER.match(user):
        raise InvalidArgument(
            f"tunnel needs a user name of letters, digits, '.', '_' or '-' (not starting with "
            f"'-' or '.'), as in {_EXAMPLE}"
        )
    if not (_HOST.match(host) or _is_ipv6(host)):
        raise InvalidArgument(f"tunnel needs a host name or IP address (not starting with '-'), as in {_EXAMPLE}")
    return SshTarget(user, host, port)


def _is_ipv6(host: str) -> bool:
    return bool(re.fullmatch(r"[0-9A-Fa-f:.]+", host)) and ":" in host


def check_remote_port(port: int | None) -> int:
    """The far side's listening port; 0 lets the far sshd choose one (reported once the tunnel is up)."""
    if port is None:
        return 0
    if not 0 <= port <= 65535:
        raise InvalidArgument("port must be 0 (the far side chooses) or a port number 1-65535")
    return port


@dataclass(frozen=True)
class HostKey:
    type: str
    blob: str  # base64, as in known_hosts

    @property
    def fingerprint(self) -> str:
        """OpenSSH's SHA256 fingerprint, what `ssh-keygen -lf` prints."""
        digest = hashlib.sha256(base64.b64decode(self.blob)).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")

    def line(self, target: SshTarget) -> str:
        return f"{target.known_hosts_name} {self.type} {self.blob}"

    def __str__(self) -> str:
        return f"{self.type} {self.blob}"


def parse_host_key(text: str) -> HostKey:
    """A public host key, `TYPE BASE64` or a whole known_hosts / ssh-keyscan line (its host is ignored)."""
    fields = text.split()
    for at in range(len(fields) - 1):
        if _KEY_TYPE.match(fields[at]):
            blob = fields[at + 1]
            try:
                base64.b64decode(blob, validate=True)
            except ValueError:
                break
            return HostKey(fields[at], blob)
    raise InvalidArgument(
        "host_key must be the far host's public key as 'ssh-ed25519 AAAA…' (a line of "
        "`ssh-keyscan -p PORT HOST` or of its /etc/ssh/ssh_host_ed25519_key.pub)"
    )
