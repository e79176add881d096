"""The egress proxy on a real unix socket, with a fake upstream on loopback: what passes, what is refused.

Names resolve through the proxy's fixed table only, and its connector refuses (and records) anything that is
not loopback, so a broken check fails the test instead of sending a packet anywhere.
"""

from __future__ import annotations

import asyncio
import http.server
import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from jarvis.runtime.adapters.egress_proxy import EgressMetrics, EgressProxy, SystemResolver, open_tcp
from jarvis.runtime.domain.egress_policy import Address, Allowlist, Policy

PROJECT = "p0123456789ab"


class Upstream(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]] = []

    def do_GET(self) -> None:
        Upstream.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        body = f"upstream saw {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def upstream() -> Iterator[int]:
    Upstream.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class TableResolver(SystemResolver):
    """The fixed table only: a name missing from it fails as unresolvable, and DNS is never asked."""

    async def resolve(self, host: str, port: int) -> list[Address]:
        if host not in self._fixed:
            raise OSError(f"{host}: not in the test's table")
        return await super().resolve(host, port)


class Proxy:
    def __init__(self, tmp: Path, upstream: int, allow: tuple[str, ...], internal: frozenset[str]) -> None:
        self.connected: list[tuple[str, int]] = []
        self.registry = CollectorRegistry()
        self.metrics = EgressMetrics(self.registry)
        resolver = TableResolver(
            {
                "fake.test": ["127.0.0.1"],
                "meta.test": ["169.254.169.254"],
                "private.test": ["10.0.0.5"],
                "ula.test": ["fd00:ec2::254"],
                "mixed.test": ["93.184.215.14", "127.0.0.1"],
                "nat64.test": ["64:ff9b::7f00:1"],  # 127.0.0.1 through a NAT64 translator
                "sixtofour.test": ["2002:a00:5::1"],  # 10.0.0.5 through a 6to4 relay
            }
        )
        self.policy = Policy(Allowlist(allow), internal)
        self.proxy = EgressProxy(lambda project: self.policy, resolver, self._connect, self.metrics)
        self.path = tmp / "proxy.sock"
        self.proxy.listen(PROJECT, self.path, None)

    async def _connect(self, address: Address, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        self.connected.append((str(address), port))
        if not address.is_loopback:
            raise AssertionError(f"the proxy tried to connect to {address}: tests reach loopback only")
        return await open_tcp(address, port)

    def exchange(self, request: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(self.path))
            sock.sendall(request)
            chunks = []
            while data := sock.recv(65536):
                chunks.append(data)
            return b"".join(chunks)

    def count(self, outcome: str) -> float:
        return self.registry.get_sample_value("jarvis_egress_connections_total", {"outcome": outcome}) or 0.0


Make = Callable[..., Proxy]


@pytest.fixture
def make(tmp_path: Path, upstream: int) -> Iterator[Make]:
    made: list[Proxy] = []

    def factory(allow: tuple[str, ...], internal: frozenset[str] = frozenset({"fake.test"})) -> Proxy:
        made.append(Proxy(tmp_path, upstream, allow, internal))
        return made[-1]

    yield factory
    for proxy in made:
        proxy.proxy.close()


def test_connect_tunnels_to_an_allowed_host(make: Make, upstream: int) -> None:
    p = make((f"fake.test:{upstream}",))
    answer = p.exchange(
        f"CONNECT fake.test:{upstream} HTTP/1.1\r\nHost: fake.test\r\n\r\nGET /tunnel HTTP/1.0\r\n\r\n".encode()
    )
    assert answer.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200")
    assert answer.endswith(b"upstream saw /tunnel")
    assert p.connected == [("127.0.0.1", upstream)]
    assert p.count("allowed") == 1
    assert (p.registry.get_sample_value("jarvis_egress_bytes_total", {"direction": "in"}) or 0) > 0


def test_plain_http_is_forwarded_once_without_proxy_headers(make: Make, upstream: int) -> None:
    p = make((f"fake.test:{upstream}",))
    answer = p.exchange(
        f"GET http://fake.test:{upstream}/a?b=1 HTTP/1.1\r\nHost: fake.test:{upstream}\r\n"
        "Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nX-Kept: yes\r\n\r\n".encode()
    )
    assert answer.startswith(b"HTTP/1.0 200")
    assert answer.endswith(b"upstream saw /a?b=1")
    path, headers = Upstream.seen[0]
    assert path == "/a?b=1"
    assert headers["x-kept"] == "yes"
    assert headers["connection"] == "close"
    assert "proxy-authorization" not in headers
    assert "proxy-connection" not in headers


def test_a_host_outside_the_allowlist_is_refused_logged_and_counted(
    make: Make, upstream: int, caplog: pytest.LogCaptureFixture
) -> None:
    p = make((f"fake.test:{upstream}",))
    with caplog.at_level(logging.WARNING, logger="jarvis.runtime.adapters.egress_proxy"):
        answer = p.exchange(b"CONNECT blocked.test:443 HTTP/1.1\r\n\r\n")
        other_port = p.exchange(f"GET http://fake.test:{upstream + 1}/ HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 Forbidden")
    assert b"blocked.test:443 is not in" in answer
    assert other_port.startswith(b"HTTP/1.1 403")
    assert p.connected == []
    assert p.count("not_allowed") == 2
    assert p.count("allowed") == 0
    refused = [r for r in caplog.records if r.getMessage() == "egress refused"]
    assert refused[0].__dict__["project"] == PROJECT
    assert refused[0].__dict__["host"] == "blocked.test"


@pytest.mark.parametrize(
    "host", ["meta.test", "private.test", "ula.test", "mixed.test", "nat64.test", "sixtofour.test"]
)
def test_names_resolving_to_internal_addresses_are_refused_before_connecting(make: Make, host: str) -> None:
    p = make((host,))
    answer = p.exchange(f"CONNECT {host}:443 HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403")
    assert b"internal address" in answer
    assert p.connected == []
    assert p.count("internal_address") == 1


def test_an_admin_allows_an_internal_name_by_name_only(make: Make, upstream: int) -> None:
    p = make((f"fake.test:{upstream}",), internal=frozenset())
    assert p.exchange(f"CONNECT fake.test:{upstream} HTTP/1.1\r\n\r\n".encode()).startswith(b"HTTP/1.1 403")
    assert p.connected == []


def test_address_literals_and_malformed_requests(make: Make) -> None:
    p = make(("fake.test",))
    assert p.exchange(b"CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
    assert p.exchange(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 403")
    assert p.exchange(b"GET https://fake.test/ HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert p.exchange(b"CONNECT fake.test HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert p.exchange(b"hello\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert p.exchange(b"CONNECT a\x1b[31m.test:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")  # never logged
    assert p.exchange(b"GET http://fake.test/ HTTP/1.1\r\n" + b"X: " + b"y" * 70_000).startswith(b"HTTP/1.1 400")
    assert p.connected == []
    assert p.count("bad_request") == 5


def test_an_unresolvable_name_is_a_bad_gateway(make: Make) -> None:
    p = make(("nowhere.invalid",))
    assert p.exchange(b"CONNECT nowhere.invalid:443 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 502")
    assert p.connected == []
    assert p.count("unresolved") == 1


def test_the_policy_is_read_per_request(make: Make, upstream: int) -> None:
    p = make(())
    request = f"CONNECT fake.test:{upstream} HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n".encode()
    assert p.exchange(request).startswith(b"HTTP/1.1 403")
    p.policy = Policy(Allowlist((f"fake.test:{upstream}",)), frozenset({"fake.test"}))
    assert p.exchange(request).startswith(b"HTTP/1.1 200")


def test_a_long_socket_path_and_forget(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    proxy = EgressProxy(lambda project: Policy(Allowlist(())), SystemResolver())
    try:
        path = deep / "proxy.sock"
        proxy.listen(PROJECT, path, None)
        proxy.listen(PROJECT, path, None)  # idempotent
        assert path.is_socket()
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        directory = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(f"/proc/self/fd/{directory}/proxy.sock")
            os.close(directory)
            sock.sendall(b"CONNECT a.test:443 HTTP/1.1\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 403")
        proxy.forget(PROJECT)
        assert not path.exists()
    finally:
        proxy.close()


def test_fixed_resolver_answers_before_dns() -> None:
    resolver = SystemResolver({"fake.test": ["127.0.0.1", "::1"]})
    found = asyncio.run(resolver.resolve("fake.test", 80))
    assert found == [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]


def test_the_host_header_must_name_the_requests_host(make: Make, upstream: int) -> None:
    """Another virtual host behind the allowed name's address is not reached by a Host header of the client's."""
    p = make((f"fake.test:{upstream}",))
    other = p.exchange(f"GET http://fake.test:{upstream}/ HTTP/1.1\r\nHost: internal-admin.test\r\n\r\n".encode())
    assert other.startswith(b"HTTP/1.1 400")
    assert b"does not name the request's host" in other
    assert p.connected == []
    assert Upstream.seen == []
    # Without a Host header the upstream gets the URL's; with the right one (any case, a trailing dot) it passes.
    assert p.exchange(f"GET http://fake.test:{upstream}/none HTTP/1.1\r\n\r\n".encode()).startswith(b"HTTP/1.0 200")
    same = f"GET http://fake.test:{upstream}/same HTTP/1.1\r\nHost: FAKE.test.:{upstream}\r\n\r\n"
    assert p.exchange(same.encode()).startswith(b"HTTP/1.0 200")
    assert [headers["host"] for _, headers in Upstream.seen] == [f"fake.test:{upstream}"] * 2


def test_a_port_past_65535_is_a_bad_request_not_a_crash(make: Make) -> None:
    p = make(("fake.test",))
    answer = p.exchange(b"GET http://fake.test:99999/ HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400")
    assert b"port" in answer
    assert p.count("bad_request") == 1
