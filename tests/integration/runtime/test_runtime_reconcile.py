"""A runtime killed with SIGKILL and started again: no orphan containers, its project's container re-adopted."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import docker
import grpc

from jarvis.api.runtime.v1 import runtime_pb2 as pb
from jarvis.api.runtime.v1 import runtime_pb2_grpc as pb_grpc
from tests.support.docker_env import docker_host, remove_instance
from tests.support.runtime_service import TEST_SECRETS_KEY
from tests.support.stack import free_port


def start_runtime(data_dir: Path, image: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "JARVIS_RUNTIME_DATA_DIR": str(data_dir),
        "JARVIS_RUNTIME_LISTEN": f"127.0.0.1:{port}",
        "JARVIS_RUNTIME_IMAGE": image,
        "JARVIS_RUNTIME_AGENT_COMMAND": '["fake-agent"]',
        "DOCKER_HOST": docker_host(),
        "JARVIS_LOG_JSON": "false",
        "JARVIS_RUNTIME_SECRETS_KEY": TEST_SECRETS_KEY,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "jarvis.runtime"], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )


def wait_serving(stub: pb_grpc.RuntimeServiceStub, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            stub.ListProjects(pb.ListProjectsRequest(), timeout=1)
            return
        except grpc.RpcError:
            time.sleep(0.1)
    raise AssertionError(f"the runtime did not serve within 30 s:\n{log.read_text()}")


def _ignore_rpc_error(call: Any) -> None:
    with contextlib.suppress(grpc.RpcError):  # the runtime serving it was killed
        call()


def _wait_for_process(stub: pb_grpc.RuntimeServiceStub, project_id: str, args: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ps = stub.Exec(pb.ExecRequest(project_id=project_id, argv=["ps", "-o", "args"]), timeout=30).stdout
        if args in ps:
            return
        time.sleep(0.2)
    raise AssertionError(f"`{args}` did not start")


def test_restart_after_sigkill_removes_orphans_and_readopts(
    tmp_path: Path, image: str, engine: docker.DockerClient
) -> None:
    port, log, data = free_port(), tmp_path / "runtime.log", tmp_path / "runtime"
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = pb_grpc.RuntimeServiceStub(channel)
    process = start_runtime(data, image, port, log)
    instance = ""
    try:
        wait_serving(stub, process, log)
        project = stub.CreateProject(pb.CreateProjectRequest(name="survivor"), timeout=60)
        container = stub.StartContainer(pb.ProjectRef(project_id=project.id), timeout=60)
        session = stub.SpawnSession(pb.SpawnSessionRequest(project_id=project.id, prompt="stubborn"), timeout=60)
        instance = engine.api.inspect_container(container.id)["Config"]["Labels"]["jarvis.runtime.instance"]
        # What a crash in the middle of creating another project leaves behind: a labelled container
        # whose project never reached the database.
        orphan = engine.containers.create(
            image,
            ["sleep", "1000"],
            network_mode="none",
            labels={"jarvis.runtime": "1", "jarvis.runtime.instance": instance, "jarvis.project": "p0123456789ab"},
        )
        (data / "projects" / ".staging-p0123456789ab").mkdir()
        # An exec whose 5 s timeout lived in the runtime: killed with it, it must not run on.
        runaway = threading.Thread(
            target=lambda: _ignore_rpc_error(
                lambda: stub.Exec(
                    pb.ExecRequest(project_id=project.id, argv=["sleep", "1000"], timeout_seconds=5), timeout=30
                )
            ),
            daemon=True,
        )
        runaway.start()
        _wait_for_process(stub, project.id, "sleep 1000")

        process.send_signal(signal.SIGKILL)
        process.wait(10)
        process = start_runtime(data, image, port, log)
        wait_serving(stub, process, log)
        deadline = time.monotonic() + 30
        # The first runtime logged it too: wait for the second's.
        while time.monotonic() < deadline and log.read_text().count("runtime reconciled") < 2:
            time.sleep(0.1)

        remaining = engine.containers.list(all=True, filters={"label": f"jarvis.runtime.instance={instance}"})
        assert [c.id for c in remaining] == [container.id]
        assert orphan.id not in {c.id for c in engine.containers.list(all=True, sparse=True)}
        assert not (data / "projects" / ".staging-p0123456789ab").exists()
        adopted = stub.GetProject(pb.ProjectRef(project_id=project.id), timeout=10)
        assert adopted.container.id == container.id
        assert adopted.container.state == "running"
        lost = stub.GetSession(pb.SessionRef(project_id=project.id, session_id=session.id), timeout=10)
        assert lost.state == "lost"
        # The lost agent's processes were killed; the container keeps serving.
        out = stub.Exec(pb.ExecRequest(project_id=project.id, argv=["ps", "-o", "args"]), timeout=30).stdout
        assert "fake-agent" not in out
        assert "sleep 1000" not in out, out
    finally:
        process.kill()
        process.wait(10)
        channel.close()
        if instance:
            remove_instance(engine, instance)


def test_a_deployed_runtime_without_a_secrets_key_refuses_to_start(tmp_path: Path, image: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_RUNTIME_SECRETS_KEY")}
    env.update(
        {
            "JARVIS_RUNTIME_DATA_DIR": str(tmp_path / "runtime"),
            "JARVIS_RUNTIME_LISTEN": "127.0.0.1:0",
            "DOCKER_HOST": docker_host(),
        }
    )
    done = subprocess.run(
        [sys.executable, "-m", "jarvis.runtime"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert "JARVIS_RUNTIME_SECRETS_KEY" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runtime" / "runtime.db").exists()  # it stopped before touching anything
