"""A runtime serving real agents in the real agent image, with a scripted fake model API on loopback that its
sessions reach only through the egress proxy (for tests/e2e/test_real_agent.py and bench/agent_sessions.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.runtime.domain.presets import PRESETS
from jarvis.runtime.server import serve_runtime
from tests.integration.runtime.conftest import REQUESTS
from tests.support.anthropic_fake import AnthropicFake, RecordingFake
from tests.support.docker_env import remove_instance
from tests.support.http_fake import serve_app
from tests.support.runtime_service import runtime_settings

IMAGE = "jarvis-agent:latest"  # built by tests/e2e/test_agent_image.py (or `jarvis image build`)
API_HOST = "api.anthropic.test"
OPENAI_HOST = "api.openai.test"
# The presets' real hosts are allowed too: pinned to loopback, which they may not reach, so nothing leaves.
REAL_HOSTS = sorted({host for p in PRESETS.values() for host in p.hosts})
KEY = "sk-ant-test-0123456789abcdefSECRET"


@dataclass
class Agent:
    stub: pb_grpc.RuntimeServiceStub
    fake: RecordingFake
    port: int
    data_dir: Path
    target: str  # the runtime's gRPC address

    def call(self, method: str, **fields: Any) -> Any:
        return getattr(self.stub, method)(REQUESTS[method](**fields), timeout=120)


def require_agent_image(engine: docker.DockerClient) -> None:
    try:
        engine.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.fail(
            f"{IMAGE} is not on the test engine: tests/e2e/test_agent_image.py builds it (it runs first in "
            "the suite), or build it with scripts/agent-image"
        )


@contextmanager
def agent_runtime(
    data_dir: Path, engine: docker.DockerClient, fake: RecordingFake | None = None, **overrides: Any
) -> Iterator[Agent]:
    """The fake API on loopback, and a runtime over gRPC that resolves API_HOST (and elsewhere.test) to it."""
    require_agent_image(engine)
    fake = fake or AnthropicFake()
    with serve_app(fake.app()) as url:
        port = int(url.rsplit(":", 1)[1])
        resolve = {name: ["127.0.0.1"] for name in (API_HOST, OPENAI_HOST, "elsewhere.test", *REAL_HOSTS)}
        values: dict[str, Any] = {
            "memory": "1g",
            "pids": 256,
            "egress_internal_hosts": [API_HOST, OPENAI_HOST],
            "egress_resolve": resolve,
        }
        settings = runtime_settings(data_dir, IMAGE, **{**values, **overrides})
        runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
        channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
        try:
            yield Agent(pb_grpc.RuntimeServiceStub(channel), fake, port, settings.data_dir, f"127.0.0.1:{server.port}")
        finally:
            channel.close()
            server.stop(1)
            runtime.close()
            remove_instance(engine, settings.instance)


def source_repo(root: Path) -> Path:
    root.mkdir()
    (root / "README.md").write_text("a project an agent works on\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "PATH": "/usr/bin:/bin",
        "HOME": str(root),
    }
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(argv, cwd=root, env=env, check=True)
    return root


def claude_project(agent: Agent, name: str, source: Path) -> str:
    """A project running Claude Code, allowed the fake's name and port, with its key and base URL as secrets."""
    project = agent.call(
        "CreateProject",
        name=name,
        agent="claude",
        source_url=str(source_repo(source)),
        egress_allow=[f"{API_HOST}:{agent.port}"],
    )
    for secret, value in (("ANTHROPIC_API_KEY", KEY), ("ANTHROPIC_BASE_URL", f"http://{API_HOST}:{agent.port}")):
        agent.stub.SetSecret(pb.SetSecretRequest(project_id=project.id, name=secret, value=value), timeout=60)
    return str(project.id)
