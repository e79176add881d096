"""`jarvis serve X` (every deployed shape) answers the same gRPC services as the X that `jarvis up` runs, for the
registry, the runtime, the scheduler and the debug service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client import CollectorRegistry

from jarvis.api.registry.v1 import project_pb2, project_pb2_grpc
from jarvis.cli.embedded import EmbeddedSettings, EmbeddedStack
from jarvis.common.internal_plane import AUTH_HEADER
from tests.support.runtime_service import TEST_SECRETS_KEY
from tests.support.stack import free_port

SERVICES = ("registry", "runtime", "scheduler", "debug")
NO_DOCKER = "unix:///nonexistent/docker.sock"  # neither runtime touches an engine: binding is what is compared


def services_of(target: str, token: str = "", timeout: float = 30) -> set[str]:
    """The services a server lists through gRPC reflection, once it answers."""
    deadline = time.monotonic() + timeout
    metadata = ((AUTH_HEADER, f"Bearer {token}"),) if token else ()
    with grpc.insecure_channel(target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        while True:
            try:
                # Read the stream to its end (one answer to one request): leaving early cancels the call.
                answers = list(
                    stub.ServerReflectionInfo(
                        iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                        timeout=5,
                        metadata=metadata,
                    )
                )
                return {s.name for answer in answers for s in answer.list_services_response.service}
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


@pytest.fixture
def up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedStack]:
    """Every service `jarvis up` runs, started as it starts them."""
    monkeypatch.setenv("JARVIS_RUNTIME_DOCKER_HOST", NO_DOCKER)
    stack = EmbeddedStack(EmbeddedSettings(data_dir=tmp_path / "up"), CollectorRegistry())
    stack.start()
    try:
        yield stack
    finally:
        stack.stop(1.0)


def test_serve_binds_every_service_that_up_binds(tmp_path: Path, up: EmbeddedStack) -> None:
    ports = {service: free_port() for service in SERVICES}
    repo = Path(__file__).resolve().parents[2]  # the project the deployed ProjectService analyzes
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "JARVIS_INTERNAL_TOKEN")}
    env.update(
        {
            "HOME": str(tmp_path),
            "JARVIS_LOG_LEVEL": "WARNING",
            "JARVIS_PROJECT_ROOTS": json.dumps([str(repo)]),
            "JARVIS_REGISTRY_DATA_DIR": str(tmp_path / "served"),
            "JARVIS_RUNTIME_DATA_DIR": str(tmp_path / "served-runtime"),
            "JARVIS_RUNTIME_DOCKER_HOST": NO_DOCKER,
            "JARVIS_RUNTIME_SECRETS_KEY": TEST_SECRETS_KEY,
            "JARVIS_SCHEDULER_DATA_DIR": str(tmp_path / "served-scheduler"),
            "JARVIS_SCHEDULER_REDIS_URL": "",  # as under `jarvis up`: the in-process beat
            "JARVIS_SCHEDULER_RUNTIME_TARGET": f"127.0.0.1:{ports['runtime']}",
            **{f"JARVIS_{service.upper()}_LISTEN": f"127.0.0.1:{ports[service]}" for service in SERVICES},
        }
    )
    served = {
        service: subprocess.Popen([sys.executable, "-m", "jarvis.cli", "serve", service], env=env)
        for service in SERVICES
    }
    token = up.settings.internal_plane().token or ""
    embedded = {"registry": up.registry_target, "runtime": up.runtime_target, "scheduler": up.scheduler_target}
    embedded["debug"] = up.debug_target
    try:
        for service in SERVICES:
            deployed = services_of(f"127.0.0.1:{ports[service]}", timeout=180)  # four processes start at once
            assert deployed == services_of(embedded[service], token), service
        assert "jarvis.api.registry.v1.ProjectService" in services_of(f"127.0.0.1:{ports['registry']}")
        # Bound, not just listed: jarvis_project's backend answers in the deployed registry.
        with grpc.insecure_channel(f"127.0.0.1:{ports['registry']}") as channel:
            report = project_pb2_grpc.ProjectServiceStub(channel).Analyze(
                project_pb2.AnalyzeRequest(path=str(repo)), timeout=30
            )
        assert "python" in [language.lower() for language in report.languages]
    finally:
        for process in served.values():
            process.terminate()
        exits = {service: process.wait(60) for service, process in served.items()}
    assert exits == dict.fromkeys(SERVICES, 0)  # each stopped gracefully on SIGTERM
