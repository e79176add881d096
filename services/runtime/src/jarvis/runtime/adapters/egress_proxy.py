"""The egress proxy: an HTTP proxy per project on a unix socket, the only way out of a project's container.

Each project's socket sits in a directory bind-mounted into its container (which has no network); a
bridge in the container turns 127.0.0.1:PORT into connections to it, so the socket a connection arrives
on names the project: no credentials, nothing the agent could forge. A request is either `CONNECT
host:port` (HTTPS, tunnelled as is) or an absolute `http://` URL (forwarded with `Connection: close`, so
a second request on the connection cannot reach another host). The proxy refuses (403) a host missing
from the project's allowlist and, before any connection, a name resolving to an internal address unless
an admin allowed that name; it connects to the very address it checked.

Everything runs on one asyncio loop in a daemon thread; the runtime's threads call in through `listen`,
`forget` and `close`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge

from jarvis.runtime.domain.egress_policy import (
    BAD_REQUEST,
    INTERNAL_ADDRESS,
    NOT_ALLOWED,
    REASONS,
    UNRESOLVED,
    UPSTREAM_FAILED,
    Address,
    Policy,
    choose,
    parse_target,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_HEAD = 64 * 1024
HEAD_TIMEOUT = 30.0
RESOLVE_TIMEOUT = 10.0
CONNECT_TIMEOUT = 15.0
CHUNK = 256 * 1024
# AF_UNIX paths are at most 107 bytes; a longer one is bound through /proc/self/fd/<directory fd>.
MAX_SOCKET_PATH = 100
HOP_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[Address]:
        """Every address of `host`; an empty list or OSError when it has none."""
        ...


Connector = Callable[[Address, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class SystemResolver:
    """The system's resolver, after a fixed table (name -> addresses) an admin may set, like /etc/hosts."""

    def __init__(self, fixed: Mapping[str, Sequence[str]] | None = None) -> None:
        self._fixed = {
            name.lower(): [ipaddress.ip_address(a) for a in addresses] for name, addresses in (fixed or {}).items()
        }

    async def resolve(self, host: str, port: int) -> list[Address]:
        if host in self._fixed:
            return list(self._fixed[host])
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


async def open_tcp(address: Address, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(str(address), port, limit=CHUNK)


class EgressMetrics:
    """Connections by outcome (allowed, or the refusal reason) and bytes by direction: bounded labels only."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.connections = Counter(
            "jarvis_egress_connections",
            "Egress proxy requests, by outcome (allowed, or why they were refused).",
            ["outcome"],
            registry=registry,
        )
        for outcome in ("allowed", *REASONS):
            self.connections.labels(outcome=outcome)
        self.bytes = Counter(
            "jarvis_egress_bytes",
            "Bytes through the egress proxy, by direction (out: from agents, in: to agents).",
            ["direction"],
            registry=registry,
        )
        self.open = Gauge("jarvis_egress_open_connections", "Egress connections open now.", registry=registry)


_METRICS: dict[int, EgressMetrics] = {}
_METRICS_LOCK = threading.Lock()


def shared_metrics(registry: CollectorRegistry = REGISTRY) -> EgressMetrics:
    """One set per registry: every runtime of a process (tests open several) counts into the same metrics."""
    with _METRICS_LOCK:
        if id(registry) not in _METRICS:
            _METRICS[id(registry)] = EgressMetrics(registry)
        return _METRICS[id(registry)]


class Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


@dataclass
class _Listener:
    server: asyncio.AbstractServer
    path: Path
    inode: int
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


class EgressProxy:
    def __init__(
        self,
        policy: Callable[[str], Policy],
        resolver: Resolver,
        connector: Connector = open_tcp,
        metrics: EgressMetrics | None = None,
    ) -> None:
        self._policy = policy
        self._resolver = resolver
        self._connector = connector
        self._metrics = metrics or shared_metrics()
        self._listeners: dict[str, _Listener] = {}
        self._lock = threading.Lock()  # listen/forget from the runtime's threads
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="egress-proxy", daemon=True)
        self._thread.start()

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ------------------------------------------------------------ listeners (called from any thread)

    def listen(self, project_id: str, path: Path, owner: tuple[int, int] | None) -> None:
        """Serve `project_id` on the unix socket `path` (created 0600, owned by `owner` when given); idempotent."""
        with self._lock:
            current = self._listeners.get(project_id)
            if current is not None and current.path == path and _inode(path) == current.inode:
                return
            self._forget(project_id)
            sock = _bind(path, owner)
            try:
                server = self._call(self._serve_socket(project_id, sock))
            except BaseException:
                sock.close()
                raise
            self._listeners[project_id] = _Listener(server, path, _inode(path))

    def forget(self, project_id: str) -> None:
        """Stop serving a project and drop its open connections."""
        with self._lock:
            self._forget(project_id)

    def listening(self, project_id: str) -> bool:
        return project_id in self._listeners

    def close(self) -> None:
        if self._loop.is_closed():
            return
        with self._lock:
            for project_id in list(self._listeners):
                with contextlib.suppress(Exception):
                    self._forget(project_id)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    def _forget(self, project_id: str) -> None:
        listener = self._listeners.pop(project_id, None)
        if listener is None:
            return
        self._call(self._stop(listener))
        if _inode(listener.path) == listener.inode:  # not a newer runtime's socket at the same path
            with contextlib.suppress(OSError):
                listener.path.unlink()

    async def _serve_socket(self, project_id: str, sock: socket.socket) -> asyncio.AbstractServer:
        return await asyncio.start_unix_server(lambda r, w: self._accept(project_id, r, w), sock=sock, limit=MAX_HEAD)

    @staticmethod
    async def _stop(listener: _Listener) -> None:
        listener.server.close()
        for task in list(listener.tasks):
            task.cancel()

    # ------------------------------------------------------------ one connection

    async def _accept(self, project_id: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        listener = self._listeners.get(project_id)
        if task is not None and listener is not None:
            listener.tasks.add(task)
        self._metrics.open.inc()
        try:
            await self._serve(project_id, reader, writer)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("egress proxy connection failed", extra={"project": project_id})
        finally:
            self._metrics.open.dec()
            writer.close()
            if task is not None and listener is not None:
                listener.tasks.discard(task)

    async def _serve(self, project_id: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host = ""
        try:
            method, host, port, head = await self._read_head(reader)
            upstream = await self._open(project_id, host, port)
        except Refused as refused:
            self._metrics.connections.labels(outcome=refused.reason).inc()
            log.warning("egress refused", extra={"project": project_id, "host": host[:253], "reason": refused.reason})
            body = f"jarvis egress: {refused.message}\n".encode()
            writer.write(
                b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n%s" % (refused.status, _STATUS[refused.status], len(body), body)
            )
            with contextlib.suppress(OSError):
                await writer.drain()
            return
        self._metrics.connections.labels(outcome="allowed").inc()
        up_reader, up_writer = upstream
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(head)
            await asyncio.gather(self._pump(reader, up_writer, "out"), self._pump(up_reader, writer, "in"))
        finally:
            up_writer.close()

    async def _read_head(self, reader: asyncio.StreamReader) -> tuple[str, str, int, bytes]:
        """(method, host, port, the head to send upstream: empty for CONNECT), or Refused(400)."""
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError) as exc:
            raise Refused(400, BAD_REQUEST, "expected an HTTP proxy request head of at most 64 KiB") from exc
        line, _, rest = raw.partition(b"\r\n")
        parts = line.decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise Refused(400, BAD_REQUEST, "expected `CONNECT host:port HTTP/1.1` or an absolute http:// URL")
        method, target, version = parts
        if method == "CONNECT":
            found = parse_target(target)
            if found is None:
                raise Refused(400, BAD_REQUEST, f"CONNECT needs host:port, got '{target[:200]}'")
            return method, *found, b""
        url = urlsplit(target)
        try:
            port = url.port or 80
        except ValueError:  # urlsplit's answer to a port past 65535 or not a number
            raise Refused(400, BAD_REQUEST, f"the URL's port is not a port number: '{target[:200]}'") from None
        found = parse_target(f"{url.hostname or ''}:{port}") if url.scheme == "http" else None
        if found is None:
            raise Refused(
                400,
                BAD_REQUEST,
                f"a proxied request needs an absolute http:// URL (use CONNECT for https), got '{target[:200]}'",
            )
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        headers = [h for h in rest.split(b"\r\n") if h and h.split(b":", 1)[0].strip().lower() not in HOP_HEADERS]
        host_line = _host_header(headers, *found)
        kept = [h for h in headers if h.split(b":", 1)[0].strip().lower() != b"host"]
        head = b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), host_line, *kept, b"Connection: close"])
        return method, *found, head + b"\r\n\r\n"

    async def _open(self, project_id: str, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        # The policy reads the database: off the loop, which serves every project's connections.
        policy = await asyncio.get_running_loop().run_in_executor(None, self._policy, project_id)
        if not policy.allowlist.allows(host, port):
            raise Refused(
                403,
                NOT_ALLOWED,
                f"{host}:{port} is not in this project's egress allowlist (its "
                "preset's hosts and the project's egress_allow entries)",
            )
        try:
            addresses = await asyncio.wait_for(self._resolver.resolve(host, port), RESOLVE_TIMEOUT)
        except (OSError, TimeoutError, ValueError):
            addresses = []
        if not addresses:
            raise Refused(502, UNRESOLVED, f"{host} did not resolve")
        address = choose(addresses, host in policy.internal_names)
        if address is None:
            raise Refused(
                403,
                INTERNAL_ADDRESS,
                f"{host} resolves to an internal address (loopback, private, "
                "link-local or metadata); an admin can allow the name in the "
                "runtime setting egress_internal_hosts",
            )
        try:
            return await asyncio.wait_for(self._connector(address, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise Refused(502, UPSTREAM_FAILED, f"could not connect to {host}:{port} ({type(exc).__name__})") from exc

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, direction: str) -> None:
        counter = self._metrics.bytes.labels(direction=direction)
        try:
            while data := await source.read(CHUNK):
                sink.write(data)
                counter.inc(len(data))
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except OSError:
            sink.close()


_STATUS = {400: b"Bad Request", 403: b"Forbidden", 502: b"Bad Gateway"}


def _host_header(headers: list[bytes], host: str, port: int) -> bytes:
    """The Host line the upstream gets: the one the URL names. A client's Host naming another virtual host behind
    the same address (the allowlist checked the URL's name, not that one) is refused."""
    wanted = host if port == 80 else f"{host}:{port}"
    for line in headers:
        field, _, value = line.partition(b":")
        if field.strip().lower() != b"host":
            continue
        given = value.strip().decode("latin-1").lower()
        given_host, sep, given_port = given.rpartition(":") if given.count(":") == 1 else (given, "", "")
        if given_host.rstrip(".") != host or (sep and given_port != str(port)) or (not sep and port != 80):
            raise Refused(
                400, BAD_REQUEST, f"the Host header '{given[:200]}' does not name the request's host {wanted}"
            )
    return f"Host: {wanted}".encode("latin-1")


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except OSError:
        return -1


def _bind(path: Path, owner: tuple[int, int] | None) -> socket.socket:
    """A listening unix socket at `path` (replacing a stale one), mode 0600, handed to `owner` when given."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
            sock.bind(str(path))
        else:
            directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                sock.bind(f"/proc/self/fd/{directory}/{path.name}")
            finally:
                os.close(directory)
        os.chmod(path, 0o600)
        if owner is not None:
            os.chown(path, *owner)
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
