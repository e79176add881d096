"""A container image of a tiny MCP server (busybox sh, see mcp_server.sh) for container-image server tests.

Built on the fake-agent image (busybox FROM scratch, user 1000:1000), locally: no registry is reachable.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import docker
import docker.errors

from tests.support.docker_env import agent_image, build_once

SCRIPT = Path(__file__).with_name("mcp_server.sh")


def _dockerfile(base: str) -> bytes:
    return (f'FROM {base}\nCOPY mcp-server /bin/mcp-server\nENTRYPOINT ["sh", "/bin/mcp-server"]\n').encode()


def _context(dockerfile: bytes, script: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data, mode in (("Dockerfile", dockerfile, 0o644), ("mcp-server", script, 0o755)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def mcp_server_image(client: docker.DockerClient) -> str:
    """Build (once per content) and return the tag of the MCP server image."""
    dockerfile, script = _dockerfile(agent_image(client)), SCRIPT.read_bytes()
    tag = f"jarvis-test-mcp:{hashlib.sha256(dockerfile + script).hexdigest()[:12]}"
    return build_once(client, tag, lambda: _context(dockerfile, script))
