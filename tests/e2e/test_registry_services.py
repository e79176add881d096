"""`jarvis serve registry` (every deployed shape) answers the same gRPC services as the registry of `jarvis up`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from jarvis.api.registry.v1 import project_pb2, project_pb2_grpc
from jarvis.cli.embedded import EmbeddedSettings, start_registry
from tests.support.stack import free_port


def services_of(target: str, timeout: float = 30) -> set[str]:
    """The services a server lists through gRPC reflection, once it answers."""
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        while True:
            try:
                # Read the stream to its end (one answer to one request): leaving early cancels the call.
                answers = list(
                    stub.ServerReflectionInfo(
                        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
                    )
                )
                return {s.name for answer in answers for s in answer.list_services_response.service}
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def test_serve_registry_binds_every_service_that_up_binds(tmp_path: Path) -> None:
    port = free_port()
    repo = Path(__file__).resolve().parents[2]  # the project the deployed ProjectService analyzes
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JARVIS_LOG_LEVEL": "WARNING",
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path / "served"),
        "JARVIS_REGISTRY_LISTEN": f"127.0.0.1:{port}",
        "JARVIS_PROJECT_ROOTS": json.dumps([str(repo)]),
    }
    served = subprocess.Popen([sys.executable, "-m", "jarvis.cli", "serve", "registry"], env=env)
    embedded = start_registry(EmbeddedSettings(data_dir=tmp_path / "up").registry_settings(), None, "127.0.0.1:0")
    try:
        deployed = services_of(f"127.0.0.1:{port}")
        assert deployed == services_of(f"127.0.0.1:{embedded.port}")
        assert "jarvis.api.registry.v1.ProjectService" in deployed
        # Bound, not just listed: jarvis_project's backend answers in the deployed registry.
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            report = project_pb2_grpc.ProjectServiceStub(channel).Analyze(
                project_pb2.AnalyzeRequest(path=str(repo)), timeout=30
            )
        assert "python" in [language.lower() for language in report.languages]
    finally:
        embedded.stop(1.0)
        served.terminate()
        assert served.wait(15) == 0
