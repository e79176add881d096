"""DNS rebinding staged in namespaces of its own, so no address beyond loopback is ever reached.

`in_namespace()` runs this module under `unshare` (user, network and mount namespaces). There it raises lo, the one
interface, and points /etc/resolv.conf (bind-mounted, in that mount namespace only) at a DNS server of a few lines on
its 127.0.0.1:53, which answers:

- `rebind-*.test`: PUBLIC to the first lookup, 127.0.0.1 to every later one (the attack). A listener on
  127.0.0.1:REBIND_PORT counts who reaches it; PUBLIC is never reached, since the namespace has no route but
  loopback: a connection to it fails at once.
- `good.test`: 127.0.0.1, where two TLS servers answer: one with a certificate for good.test, one with a certificate
  for localhost and 127.0.0.1 only (what a check made on the address instead of the name would accept).

It then runs Jarvis's outbound fetches against them and prints what each met, one JSON object.
"""

from __future__ import annotations

import asyncio
import fcntl
import http.server
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PUBLIC = "93.184.215.14"  # public by jarvis.common.addresses; inside the namespace there is no route to it
REBIND_PORT = 8443
GOOD_PORT, WRONG_NAME_PORT = 9443, 9444
ROOT = Path(__file__).resolve().parents[2]


def in_namespace() -> dict[str, Any]:
    """What each fetch met in the namespace (the pytest side). Needs util-linux's unshare, in Debian's base."""
    from tests.support.required_tool import required_tool

    unshare = required_tool("unshare")
    # No proxy from the environment: a request sent to one would fail without ever testing the connection itself.
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    done = subprocess.run(
        [unshare, "--user", "--map-root-user", "--net", "--mount", sys.executable, "-m", "tests.support.rebinding"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"the namespace's run failed ({done.returncode}):\n{done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


# ------------------------------------------------------------ inside the namespace


def _raise_loopback() -> None:
    siocsifflags, up_loopback_running = 0x8914, 0x1 | 0x8 | 0x40
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH22x", b"lo", up_loopback_running))


def _use_own_resolver(directory: Path) -> None:
    """/etc/resolv.conf names 127.0.0.1 and hosts come from files, then DNS (no other resolver of the machine's)."""
    for name, text in (
        ("resolv.conf", "nameserver 127.0.0.1\noptions attempts:1\n"),
        ("nsswitch.conf", "hosts: files dns\n"),
    ):
        (directory / name).write_text(text)
        subprocess.run(["mount", "--bind", str(directory / name), f"/etc/{name}"], check=True)


class Resolver:
    """Answers A queries over UDP: rebind-*.test first PUBLIC then 127.0.0.1, good.test 127.0.0.1; AAAA nothing."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        self.lookups: dict[str, int] = {}
        threading.Thread(target=self._serve, daemon=True).start()

    def answer(self, name: str, qtype: int) -> list[str] | None:
        """The addresses to answer; None: no such name."""
        if not name.endswith(".test"):
            return None
        if qtype != 1:  # only A records: the namespace has no IPv6 route either
            return []
        if name.startswith("rebind-"):
            self.lookups[name] = self.lookups.get(name, 0) + 1
            return [PUBLIC if self.lookups[name] == 1 else "127.0.0.1"]
        return ["127.0.0.1"]

    def _serve(self) -> None:
        while True:
            query, peer = self.sock.recvfrom(512)
            labels, at = [], 12
            while query[at]:
                labels.append(query[at + 1 : at + 1 + query[at]].decode().lower())
                at += 1 + query[at]
            qtype = struct.unpack(">H", query[at + 1 : at + 3])[0]
            addresses = self.answer(".".join(labels), qtype)
            flags = 0x8180 | (3 if addresses is None else 0)  # a response, recursion available; NXDOMAIN or not
            records = b"".join(struct.pack(">HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(a) for a in addresses or [])
            header = query[:2] + struct.pack(">HHHHH", flags, 1, len(addresses or []), 0, 0)
            self.sock.sendto(header + query[12 : at + 5] + records, peer)


class TLSServer:
    """An https server on 127.0.0.1:`port` with a certificate for `dns_name`: it serves a client metadata document
    naming its own URL at /client.json, and records the SNI and Host it was sent."""

    def __init__(self, directory: Path, port: int, dns_name: str) -> None:
        from tests.support.tls import Authority

        authority = Authority(directory, f"ca-{port}")
        issued = authority.issue(f"server-{port}", dns_name)
        self.ca = authority.path
        self.seen: list[dict[str, str]] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(issued.cert, issued.key)
        sni: list[str] = []
        context.sni_callback = lambda _sock, name, _ctx: sni.append(name or "")
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host = self.headers.get("Host", "")
                seen.append({"host": host, "sni": sni[-1] if sni else ""})
                body = json.dumps(
                    {"client_id": f"https://{host}{self.path}", "redirect_uris": ["http://127.0.0.1:9/callback"]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


async def _cimd(url: str, allow_loopback: bool = False) -> str:
    from jarvis.aggregator.oauth.server.cimd import MetadataDocuments
    from jarvis.aggregator.oauth.server.errors import OAuthError

    try:
        await MetadataDocuments(allow_loopback).fetch(url)
    except OAuthError as refused:
        return refused.description
    return "fetched"


async def _guard(url: str, allow_loopback: bool = False) -> str:
    """A request through the hook Jarvis's OAuth client for a person uses (consent.py)."""
    import httpx2

    from jarvis.aggregator.downstream.auth.guard import AddressGuard, OAuthClientSettings

    guard = AddressGuard("https://server.test/mcp", OAuthClientSettings(allow_hosts=[], allow_loopback=allow_loopback))
    async with httpx2.AsyncClient(timeout=5, event_hooks={"request": [guard.check]}) as client:
        try:
            answer = await client.get(url)
        except httpx2.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"
    return f"HTTP {answer.status_code}"


def main() -> None:
    from tests.support.loopback_listener import Listener

    directory = Path(tempfile.mkdtemp(prefix="rebinding-"))
    _raise_loopback()
    _use_own_resolver(directory)
    resolver = Resolver()
    listener = Listener(REBIND_PORT)
    good = TLSServer(directory, GOOD_PORT, "good.test")
    wrong = TLSServer(directory, WRONG_NAME_PORT, "localhost")
    bundle = directory / "cas.pem"
    bundle.write_bytes(good.ca.read_bytes() + wrong.ca.read_bytes())
    os.environ["SSL_CERT_FILE"] = str(bundle)  # httpx2's default context trusts it (and nothing else here)
    result: dict[str, Any] = {}
    for name, fetch in (("cimd", _cimd), ("guard", _guard)):
        before = listener.accepted
        outcome = asyncio.run(fetch(f"https://rebind-{name}.test:{REBIND_PORT}/.well-known/x", False))
        time.sleep(0.2)  # a connection the listener accepted is counted by its thread
        result[name] = {
            "outcome": outcome,
            "connections": listener.accepted - before,
            "lookups": resolver.lookups.get(f"rebind-{name}.test", 0),
        }
    result["cimd_good"] = asyncio.run(_cimd(f"https://good.test:{GOOD_PORT}/client.json", allow_loopback=True))
    result["guard_good"] = asyncio.run(_guard(f"https://good.test:{GOOD_PORT}/metadata", allow_loopback=True))
    result["good_seen"] = good.seen
    result["cimd_wrong_name"] = asyncio.run(
        _cimd(f"https://good.test:{WRONG_NAME_PORT}/client.json", allow_loopback=True)
    )
    result["wrong_seen"] = wrong.seen
    print(json.dumps(result))


if __name__ == "__main__":
    main()
