"""ProjectService over a real gRPC server on port 0: all three RPCs and their error statuses."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf.message import Message

from jarvis.api.registry.v1 import project_pb2, project_pb2_grpc
from jarvis.common.grpc_server import ServiceBinding, create_server
from jarvis.registry.project_servicer import ProjectServicer
from tests.support.git_env import GIT_ENV


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """The allowed root, holding a committed Python project with a pending change."""
    root = tmp_path / "projects"
    app = root / "app"
    (app / "app").mkdir(parents=True)
    (app / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["flask", "pytest"]\n')
    (app / "app" / "main.py").write_text("print('v1')\n")
    (app / "package.json").write_text(json.dumps({"devDependencies": {"vitest": "1"}}))
    _git(app, "init", "-q", "-b", "main")
    _git(app, "add", ".")
    _git(app, "commit", "-q", "-m", "init")
    (app / "app" / "main.py").write_text("print('v2')\n")
    (root / "plain").mkdir()
    return root


@pytest.fixture
def stub(projects: Path) -> Iterator[project_pb2_grpc.ProjectServiceStub]:
    servicer = ProjectServicer(allowed_roots=[projects])
    binding = ServiceBinding(
        project_pb2_grpc.add_ProjectServiceServicer_to_server, servicer, "jarvis.api.registry.v1.ProjectService"
    )
    running = create_server([binding], "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    try:
        yield project_pb2_grpc.ProjectServiceStub(channel)
    finally:
        channel.close()
        running.stop(grace=1)


def _error(call: Callable[..., Any], request: Message) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        call(request, timeout=30)
    return caught.value


def test_analyze(stub: project_pb2_grpc.ProjectServiceStub, projects: Path) -> None:
    reply = stub.Analyze(project_pb2.AnalyzeRequest(path=str(projects / "app")), timeout=30)

    assert reply.path == str((projects / "app").resolve())
    assert list(reply.languages) == ["python"]
    assert dict(reply.file_counts) == {"python": 1}
    assert list(reply.frameworks) == ["flask"]
    assert set(reply.test_frameworks) == {"pytest", "vitest"}
    assert set(reply.package_managers) == {"pip", "npm"}
    assert reply.is_git_repo
    assert reply.git_branch == "main"


def test_diff(stub: project_pb2_grpc.ProjectServiceStub, projects: Path) -> None:
    reply = stub.Diff(project_pb2.DiffRequest(path=str(projects / "app")), timeout=30)
    staged = stub.Diff(project_pb2.DiffRequest(path=str(projects / "app"), staged=True), timeout=30)
    cut = stub.Diff(project_pb2.DiffRequest(path=str(projects / "app"), max_bytes=40), timeout=30)

    assert reply.branch == "main"
    assert list(reply.files) == ["app/main.py"]
    assert "+print('v2')" in reply.diff
    assert not reply.truncated
    assert " M app/main.py" in reply.status
    assert staged.diff == ""
    assert list(staged.files) == []
    assert cut.truncated
    assert len(cut.diff.encode()) <= 40


def test_apply_devops(stub: project_pb2_grpc.ProjectServiceStub, projects: Path) -> None:
    app = projects / "app"
    dry = stub.ApplyDevops(project_pb2.ApplyDevopsRequest(path=str(app), dry_run=True), timeout=30)
    assert not (app / "ruff.toml").exists()

    reply = stub.ApplyDevops(project_pb2.ApplyDevopsRequest(path=str(app), stack="python"), timeout=30)
    again = stub.ApplyDevops(project_pb2.ApplyDevopsRequest(path=str(app)), timeout=30)

    assert dry.stack == reply.stack == "python"
    assert (
        list(dry.written) == list(reply.written) == ["ruff.toml", ".pre-commit-config.yaml", ".github/workflows/ci.yml"]
    )
    assert yaml.safe_load((app / ".github/workflows/ci.yml").read_text())["jobs"]
    assert list(again.written) == []
    assert len(again.skipped) == 3


@pytest.mark.parametrize(
    ("rpc", "request_for", "code", "details"),
    [
        (
            "Analyze",
            lambda r: project_pb2.AnalyzeRequest(path=str(r / "missing")),
            grpc.StatusCode.NOT_FOUND,
            "does not exist; pass the absolute path of an existing project directory",
        ),
        (
            "Analyze",
            lambda r: project_pb2.AnalyzeRequest(path="relative/dir"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "path 'relative/dir' is relative; pass the absolute path",
        ),
        ("Analyze", lambda r: project_pb2.AnalyzeRequest(), grpc.StatusCode.INVALID_ARGUMENT, "path is required"),
        (
            "Analyze",
            lambda r: project_pb2.AnalyzeRequest(path=str(r / "..")),
            grpc.StatusCode.PERMISSION_DENIED,
            "outside the allowed project roots",
        ),
        (
            "Diff",
            lambda r: project_pb2.DiffRequest(path=str(r / "plain")),
            grpc.StatusCode.FAILED_PRECONDITION,
            "is not a git repository; run `git init` there",
        ),
        (
            "ApplyDevops",
            lambda r: project_pb2.ApplyDevopsRequest(path=str(r / "app"), stack="cobol"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "unknown stack 'cobol'; supported stacks: go, node, python, rust",
        ),
    ],
)
def test_errors_carry_status_and_readable_details(
    stub: project_pb2_grpc.ProjectServiceStub,
    projects: Path,
    rpc: str,
    request_for: Callable[[Path], Message],
    code: grpc.StatusCode,
    details: str,
) -> None:
    error = _error(getattr(stub, rpc), request_for(projects))
    assert error.code() == code
    assert details in error.details()
