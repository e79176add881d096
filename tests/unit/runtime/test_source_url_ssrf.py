"""Issue 34 item 6, replayed on the runtime's host-side git: `project create source_url=https://127.0.0.1:<port>/x`
made the runtime host connect anywhere, and its errors told open ports from closed ones. Remote sources now follow
the egress proxy's address rules before any connection, and a failed clone says the same whatever answered."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from jarvis.common.errors import InvalidArgument
from jarvis.runtime.adapters.git import HostGit
from tests.support.loopback_listener import Listener, closed_port
from tests.support.tls import Authority


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


def _refusal(git: HostGit, source: str, target: Path) -> str:
    with pytest.raises(InvalidArgument) as refused:
        git.clone(source, target, timeout=20)
    return str(refused.value)


@pytest.mark.parametrize("scheme", ["https", "ssh"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_an_internal_source_is_refused_before_any_connection(
    tmp_path: Path, listener: Listener, scheme: str, host: str
) -> None:
    git = HostGit(tmp_path / "git-home")
    why = _refusal(git, f"{scheme}://{host}:{listener.port}/x", tmp_path / "clone")
    assert "internal address" in why
    assert "egress_internal_hosts" in why
    assert listener.accepted == 0
    assert not (tmp_path / "clone").exists()


def test_open_and_closed_ports_fail_alike_where_an_admin_allowed_the_name(tmp_path: Path, listener: Listener) -> None:
    git = HostGit(tmp_path / "git-home", internal_hosts=["localhost"])
    closed = closed_port()
    open_port = _refusal(git, f"https://localhost:{listener.port}/x", tmp_path / "a")
    closed_answer = _refusal(git, f"https://localhost:{closed}/x", tmp_path / "b")
    assert open_port.replace(str(listener.port), "PORT") == closed_answer.replace(str(closed), "PORT")
    assert "could not clone" in open_port
    for telltale in ("refused", "ssl", "tls", "timed out", "connect"):
        assert telltale not in open_port.lower()


def test_credentials_in_a_source_url_stay_out_of_the_error(tmp_path: Path) -> None:
    git = HostGit(tmp_path / "git-home")
    why = _refusal(git, "https://alice:hunter2@127.0.0.1:9/x", tmp_path / "c")
    assert "hunter2" not in why


class Redirector:
    """An HTTPS server on localhost, signed by a test CA, whose every answer redirects to `location`."""

    def __init__(self, directory: Path, location: str) -> None:
        self.authority = Authority(directory)
        issued = self.authority.issue("localhost")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(issued.cert, issued.key)
        self.requests: list[str] = []
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append(self.path)
                self.send_response(301)
                self.send_header("Location", location + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_a_redirect_from_an_allowed_source_is_not_followed(tmp_path: Path, listener: Listener) -> None:
    # An admin allowed `localhost`; its server answers with a redirect to another internal address, which no check
    # saw (the pin covers the name asked for only). git must not follow it.
    redirector = Redirector(tmp_path, f"https://127.0.0.1:{listener.port}")
    try:
        git = HostGit(tmp_path / "git-home", internal_hosts=["localhost"])
        with (tmp_path / "git-home" / "gitconfig").open("a") as config:  # trust the test CA, as a deployment would
            config.write(f"[http]\n\tsslCAInfo = {redirector.authority.path}\n")
        why = _refusal(git, f"https://localhost:{redirector.port}/x", tmp_path / "d")
        assert redirector.requests, "git reached the allowed server"
        assert listener.accepted == 0
        assert "could not clone" in why
    finally:
        redirector.server.shutdown()
        redirector.server.server_close()


@pytest.mark.parametrize(
    "source",
    [
        "https://127.0.0.1\\@localhost/x",
        "https://a@b@localhost/x",
        "ssh://localhost;touch${IFS}pwned/x",
        "https://[fe80::1%25eth0]/x",
        "https://local host/x",
    ],
)
def test_a_source_whose_host_is_not_plain_is_refused_before_any_lookup(tmp_path: Path, source: str) -> None:
    git = HostGit(tmp_path / "git-home", internal_hosts=["localhost"])
    why = _refusal(git, source, tmp_path / "e")
    assert "does not name a host plainly" in why
    assert not (tmp_path / "e").exists()
    assert not (tmp_path / "pwned").exists()
