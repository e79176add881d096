"""The agent image (deploy/agent/Dockerfile) builds here, with no registry reachable from the build, and every
agent CLI in it runs in a container without a network, as a project's would.

scripts/agent-image does what a person would: the base from Debian's packages, a host cache of the .debs,
npm tarballs and wheels served on loopback, `jarvis image build --network host`. Its caches (the package
cache and the engine's layers) make a second run take seconds; a cold one takes minutes (see the README).
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from pathlib import Path

import docker
import pytest

from jarvis.runtime.app import Runtime
from tests.support.docker_env import docker_host, remove_instance
from tests.support.runtime_service import runtime_settings

REPO = Path(__file__).resolve().parents[2]
TAG = "jarvis-agent:latest"  # the runtime's default image: later tests and a person's `jarvis up` use it
VERSIONS = {
    "claude": "Claude Code",
    "codex": "codex-cli",
    "gemini": "",
    "opencode": "",
    "aider": "aider",
    "node": "v22.",
    "python3": "Python 3.11",
    "git": "git version",
    "socat": "socat",
}


@pytest.mark.timeout(3600)  # cold: about 22 minutes here (cache fill, base, build); warm: seconds
def test_the_agent_image_builds_without_registries_and_its_clis_run(engine: docker.DockerClient) -> None:
    built = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "agent-image"), "--tag", TAG],
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
        env={
            "DOCKER_HOST": docker_host(),
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(Path.home()),
        },
    )
    assert built.returncode == 0, built.stderr[-3000:] + built.stdout[-3000:]
    assert "Step 1/" in built.stdout  # the build's progress was streamed
    assert f"built {TAG}" in built.stderr

    config = engine.images.get(TAG).attrs["Config"]
    assert config["User"] == "1000:1000"
    script = "; ".join(
        f"echo '== {cli}'; {cli} {'-V' if cli == 'socat' else '--version'} 2>&1 | head -3" for cli in VERSIONS
    )
    output = engine.containers.run(
        TAG,
        ["bash", "-c", script],
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,size=256m,mode=1777"},
        remove=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges:true"],
    ).decode()
    sections = dict(part.split("\n", 1) for part in output.split("== ")[1:])
    for cli, expected in VERSIONS.items():
        text = sections[cli].strip()
        assert text, f"{cli} printed nothing"
        assert "not found" not in text, text
        assert expected in text, (cli, text)


def test_the_agent_image_reaches_an_allowed_host_through_the_egress_bridge(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    """The image's own socat bridges its `--network none` container to the runtime's proxy; curl uses HTTP(S)_PROXY."""
    engine.images.get(TAG)  # built by the test above (or `jarvis image build`)
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = upstream.server_address[1]
    settings = runtime_settings(
        tmp_path / "rt",
        TAG,
        egress_resolve={"api.fake.test": ["127.0.0.1"], "blocked.fake.test": ["127.0.0.1"]},
        egress_internal_hosts=["api.fake.test"],
    )
    runtime = Runtime.open(settings)
    try:
        project = runtime.projects.create("agent-egress", "", "", [], "", False, [f"api.fake.test:{port}"])
        runtime.containers.start(project.id)
        allowed = runtime.containers.exec(
            project.id, [], f"curl -sS http://api.fake.test:{port}/v1/messages", "", 30, 0
        )
        assert (allowed.exit_code, allowed.stdout) == (0, "fake model API: /v1/messages"), allowed.stderr
        # Not allowlisted (and mapped to loopback, so even a broken check would send nothing out).
        refused = runtime.containers.exec(project.id, [], "curl -sS https://blocked.fake.test/v1/messages", "", 30, 0)
        assert refused.exit_code != 0
        assert "CONNECT tunnel failed, response 403" in refused.stderr
    finally:
        runtime.close()
        remove_instance(engine, settings.instance)
        upstream.shutdown()
        upstream.server_close()


class Upstream(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"fake model API: {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return
