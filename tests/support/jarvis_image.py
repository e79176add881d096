"""The Jarvis image (deploy/Dockerfile) built for real by scripts/image, and its containers as a deployment runs them.

scripts/image makes the base image from Debian's packages and feeds the build from a loopback package cache,
so this works where no image registry is reachable. A machine without debootstrap or the docker CLI fails
the test with what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docker
import grpc
import pytest
from docker.models.containers import Container
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.stack import REPO

IMAGE_TAG = "jarvis-e2e:latest"
# How each container runs: a read-only root with /tmp the one writable place, no capabilities, no
# privilege escalation, the image's own non-root user.
HARDENED: dict[str, Any] = {
    "read_only": True,
    "tmpfs": {"/tmp": "rw,noexec,nosuid,nodev,size=512m,mode=1777"},
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
}
# The aggregator runs the catalog's stdio servers from npx's and uvx's caches under HOME=/tmp/home.
EXEC_TMP = {"/tmp": "rw,exec,nosuid,nodev,size=512m,mode=1777"}
IMAGE_UID = 10001


def build_image() -> tuple[str, float]:
    """Build IMAGE_TAG with scripts/image (cached layers make a second build take seconds); tag and seconds."""
    missing = [tool for tool in ("docker", "debootstrap", "apt-get", "dpkg-scanpackages") if not shutil.which(tool)]
    if missing:
        pytest.fail(
            f"building the image needs {', '.join(missing)}: apt-get install docker.io debootstrap "
            "dpkg-dev (.ci/run installs them)"
        )
    started = time.monotonic()
    done = subprocess.run(
        [str(REPO / "scripts" / "image"), IMAGE_TAG],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        env={**os.environ, "PYTHON": sys.executable},
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/image failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    return IMAGE_TAG, time.monotonic() - started


def chown_for_image(path: Path) -> Path:
    """A host directory the image's user may write (tests run as root; a container's user is not)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, IMAGE_UID, IMAGE_UID)
    return path


def grpc_serving(port: int) -> bool:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
        except grpc.RpcError:
            return False
    return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)


def wait_serving(container: Container, port: int, timeout: float = 90) -> float:
    """Seconds from now until the container's gRPC health answers SERVING; fails with its log if it exits."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if grpc_serving(port):
            return time.monotonic() - started
        container.reload()
        if container.status == "exited":
            raise AssertionError(f"{container.name} exited before SERVING:\n{log_of(container)}")
        time.sleep(0.1)
    raise AssertionError(f"{container.name} not SERVING on {port} within {timeout}s:\n{log_of(container)}")


def log_of(container: Container, tail: int = 60) -> str:
    try:
        return str(container.logs(tail=tail).decode(errors="replace"))
    except docker.errors.APIError as exc:
        return f"(no log: {exc})"


def stop_timed(container: Container, timeout: int = 10) -> tuple[float, int]:
    """`docker stop` (SIGTERM, then SIGKILL after `timeout`): seconds it took and the exit code."""
    started = time.monotonic()
    container.stop(timeout=timeout)
    seconds = time.monotonic() - started
    return seconds, int(container.wait(timeout=30)["StatusCode"])
