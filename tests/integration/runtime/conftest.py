"""A real runtime gRPC service on a real Docker engine, with the fake-agent image and a git source."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import grpc
import pytest

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import RunningServer
from jarvis.runtime.app import Runtime
from jarvis.runtime.server import serve_runtime
from jarvis.runtime.settings import RuntimeSettings
from tests.support.docker_env import (
    git_available,
    instance_containers,
    remove_instance,
)
from tests.support.git_env import BARE_GIT_ENV
from tests.support.runtime_service import runtime_settings


@dataclass
class Service:
    runtime: Runtime
    server: RunningServer
    stub: pb_grpc.RuntimeServiceStub
    settings: RuntimeSettings
    engine: docker.DockerClient

    def call(self, method: str, **fields: Any) -> Any:
        """Call `method` with a request built from `fields` (the request type is looked up by method)."""
        stub_method = getattr(self.stub, method)
        request_type = REQUESTS[method]
        return stub_method(request_type(**fields), timeout=120)

    def containers(self) -> list[Any]:
        return instance_containers(self.engine, self.settings.instance)


REQUESTS: dict[str, Callable[..., Any]] = {
    "CreateProject": pb.CreateProjectRequest,
    "ListProjects": pb.ListProjectsRequest,
    "GetProject": pb.ProjectRef,
    "DeleteProject": pb.ProjectRef,
    "ProjectOptions": pb.ProjectOptionsRequest,
    "ProjectTasks": pb.ProjectRef,
    "ProjectChanges": pb.ProjectChangesRequest,
    "StartContainer": pb.ProjectRef,
    "StopContainer": pb.ProjectRef,
    "ContainerLogs": pb.ContainerLogsRequest,
    "Exec": pb.ExecRequest,
    "RebuildImage": pb.ProjectRef,
    "SpawnSession": pb.SpawnSessionRequest,
    "MessageSession": pb.MessageSessionRequest,
    "GetSession": pb.SessionRef,
    "ListSessions": pb.ProjectRef,
    "EndSession": pb.SessionRef,
    "SessionEvents": pb.SessionEventsRequest,
    "CleanupSessions": pb.CleanupSessionsRequest,
    "RespondToolRequest": pb.RespondToolRequestRequest,
    "ListWorkspaces": pb.ProjectRef,
    "DeleteWorkspace": pb.WorkspaceRef,
    "GetLimits": pb.GetLimitsRequest,
}


@pytest.fixture
def service(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, image: str, engine: docker.DockerClient
) -> Iterator[Service]:
    # Projects may come from this session's temp dirs only: not the whole of /tmp, where a checkout of this
    # repository (the "outside" repository of the confinement tests) may itself live.
    settings = runtime_settings(tmp_path / "runtime", image, project_roots=[tmp_path_factory.getbasetemp()])
    runtime, server = serve_runtime(settings, None, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield Service(runtime, server, pb_grpc.RuntimeServiceStub(channel), settings, engine)
    finally:
        channel.close()
        server.stop(1)
        runtime.close()
        remove_instance(engine, settings.instance)


def make_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository with one commit holding `files`."""
    git = git_available()
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([git, *argv], cwd=root, env=BARE_GIT_ENV, check=True)
    return root


@pytest.fixture
def source(tmp_path: Path, image: str) -> Path:
    return make_repo(
        tmp_path / "source",
        {
            "README.md": "hello\n",
            "Makefile": "test:\n\techo ok\nlint:\n\ttrue\n",
            "package.json": '{"scripts": {"dev": "vite"}}\n',
            "Dockerfile": f"FROM {image}\nUSER root\nRUN echo built > /built.txt\nUSER 1000:1000\n",
        },
    )


def rpc_error(call: Callable[[], Any]) -> grpc.RpcError:
    """The error a call fails with (it must fail)."""
    try:
        call()
    except grpc.RpcError as exc:
        return exc
    raise AssertionError("the call succeeded but was expected to fail")
