"""The image as a team deploys it: every service a container of deploy/Dockerfile's image, hardened, checked
through a real MCP client over HTTP, and stopped cleanly.

The containers share one network namespace (no Docker networks here): the first joins the host's, so this
test, the Redis it starts and the package files it serves are reached on loopback, and the others join the
first with `--network container:`. Each runs with a read-only root and a /tmp tmpfs, no capabilities, no new
privileges, as the image's non-root user; state lives on host directories mounted as volumes (SQLite).
The runtime drives the test's Docker engine through its socket (mounted, with the socket's group).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import docker
import pytest
from docker.models.containers import Container

from tests.support.docker_env import docker_client, git_available, remove_instance
from tests.support.downstream import eventually, text_of
from tests.support.git_env import BARE_GIT_ENV
from tests.support.jarvis_image import (
    EXEC_TMP,
    HARDENED,
    IMAGE_UID,
    build_image,
    chown_for_image,
    log_of,
    stop_timed,
    wait_serving,
)
from tests.support.redis_server import redis_url
from tests.support.runtime_service import TEST_SECRETS_KEY
from tests.support.stack import REPO, free_port, mcp_client, result_json, wait_for_url

# The first test builds the image: a cold build (no cached layers) takes minutes on two busy cores.
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(1800)]

TEMPLATE = "/opt/jarvis/lib/python3.11/site-packages/jarvis/projectserver/template/mcp-server"
SOURCE = "/srv/source"  # the local git repository a project is created from, inside the runtime container
WHEELS = "/srv/wheels"  # mcp-server-time's wheels, for the catalog's `uvx mcp-server-time`


@dataclass
class Pod:
    image: str
    build_seconds: float
    ports: dict[str, int]
    containers: dict[str, Container] = field(default_factory=dict)
    serving_seconds: dict[str, float] = field(default_factory=dict)
    runtime_data: Path = Path()

    @property
    def mcp(self) -> str:
        return f"http://127.0.0.1:{self.ports['aggregator']}/mcp"

    def logs(self) -> str:
        return "\n".join(f"--- {name}\n{log_of(c)}" for name, c in self.containers.items())


def _text(output: bytes | Iterator[bytes]) -> str:
    return (output if isinstance(output, bytes) else b"".join(output)).decode(errors="replace")


def _pinned(name: str) -> str:
    for line in (REPO / "requirements.lock").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line
    raise AssertionError(f"{name} is not pinned in requirements.lock")


def _time_server_wheels() -> Path:
    """mcp-server-time and its dependencies as wheels, downloaded once by pip (PyPI is a package registry)."""
    requirement = _pinned("mcp-server-time")
    directory = Path("~/.cache/jarvis/test-wheels").expanduser() / hashlib.sha256(requirement.encode()).hexdigest()[:12]
    if not (directory / "complete").is_file():
        directory.mkdir(parents=True, exist_ok=True)
        pythons = [
            p
            for p in (
                sys.executable,
                "/usr/bin/python3",
                *(str(Path(d) / "python3") for d in os.environ.get("PATH", "").split(os.pathsep)),
            )
            if Path(p).is_file()
        ]
        for python in pythons:
            done = subprocess.run(
                [
                    python,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--only-binary=:all:",
                    "--python-version",
                    "3.11",
                    "--dest",
                    str(directory),
                    requirement,
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
            if done.returncode == 0:
                (directory / "complete").write_text(requirement)
                break
        else:
            pytest.fail(f"no pip could download {requirement}: {done.stderr[-2000:]}")
    return directory


def _source_repo(path: Path) -> Path:
    git = git_available()
    path.mkdir(parents=True)
    (path / "README.md").write_text("# deployed\n")
    for argv in (
        ["init", "--quiet", "--initial-branch", "main"],
        ["add", "README.md"],
        ["commit", "--quiet", "-m", "first"],
    ):
        subprocess.run([git, *argv], cwd=path, env=BARE_GIT_ENV, check=True)
    return path


def _socket_path() -> str:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    parsed = urlparse(host)
    if parsed.scheme != "unix":
        pytest.fail(f"the runtime container mounts the engine's socket; DOCKER_HOST={host} is not a unix socket")
    return parsed.path


@pytest.fixture(scope="session")
def jarvis_image() -> tuple[str, float]:
    docker_client()  # fails with what to start when there is no engine
    return build_image()


@pytest.fixture(scope="module")
def pod(jarvis_image: tuple[str, float], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pod]:
    engine = docker_client()
    image, build_seconds = jarvis_image
    base = tmp_path_factory.mktemp("image-pod")
    names = ("registry", "debug", "runtime", "scheduler", "aggregator")
    pod = Pod(image=image, build_seconds=build_seconds, ports={name: free_port() for name in names})
    pod.runtime_data = chown_for_image(base / "runtime")
    instance = hashlib.sha256(f"sqlite:///{pod.runtime_data / 'runtime.db'}".encode()).hexdigest()[:12]
    uv_toml = base / "uv.toml"
    uv_toml.write_text(f'find-links = ["{WHEELS}"]\nno-index = true\n')
    socket = _socket_path()
    targets = {
        f"JARVIS_AGGREGATOR_{name.upper()}_TARGET": f"127.0.0.1:{pod.ports[name]}"
        for name in ("registry", "debug", "runtime", "scheduler")
    }
    with redis_url(base) as redis:
        scheduler_env = {
            "JARVIS_SCHEDULER_LISTEN": f"127.0.0.1:{pod.ports['scheduler']}",
            "JARVIS_SCHEDULER_RUNTIME_TARGET": f"127.0.0.1:{pod.ports['runtime']}",
            "JARVIS_SCHEDULER_REDIS_URL": redis.rsplit("/", 1)[0] + "/1",
        }
        scheduler_volumes = {str(chown_for_image(base / "scheduler")): {"bind": "/var/lib/jarvis/scheduler"}}
        specs: dict[str, dict[str, Any]] = {
            # Project analysis and local sources are confined to roots (JARVIS_*_PROJECT_ROOTS; default HOME).
            "registry": {
                "environment": {
                    "JARVIS_REGISTRY_LISTEN": f"127.0.0.1:{pod.ports['registry']}",
                    "JARVIS_REGISTRY_PROJECT_ROOTS": json.dumps([TEMPLATE]),
                },
                "volumes": {str(chown_for_image(base / "registry")): {"bind": "/var/lib/jarvis"}},
            },
            "debug": {"environment": {"JARVIS_DEBUG_LISTEN": f"127.0.0.1:{pod.ports['debug']}"}},
            "runtime": {
                "environment": {
                    "JARVIS_RUNTIME_LISTEN": f"127.0.0.1:{pod.ports['runtime']}",
                    "JARVIS_RUNTIME_DATA_DIR": str(pod.runtime_data),
                    "JARVIS_RUNTIME_SECRETS_KEY": TEST_SECRETS_KEY,
                    "JARVIS_RUNTIME_PROJECT_ROOTS": json.dumps([str(Path(SOURCE).parent)]),
                    "DOCKER_HOST": "unix:///var/run/docker.sock",
                },
                # Bind mounts of project containers name host paths: the data dir has the same path on both.
                "volumes": {
                    socket: {"bind": "/var/run/docker.sock"},
                    str(pod.runtime_data): {"bind": str(pod.runtime_data)},
                    str(_source_repo(base / "source")): {"bind": SOURCE, "mode": "ro"},
                },
                "group_add": [str(os.stat(socket).st_gid)],
            },
            "scheduler": {"environment": scheduler_env, "volumes": scheduler_volumes},
            "scheduler-worker": {"environment": scheduler_env, "volumes": scheduler_volumes},
            "scheduler-beat": {"environment": scheduler_env, "volumes": scheduler_volumes},
            "aggregator": {
                "environment": {
                    "JARVIS_AGGREGATOR_PORT": str(pod.ports["aggregator"]),
                    **targets,
                    "JARVIS_REDIS_URL": redis,
                },
                "volumes": {
                    str(uv_toml): {"bind": "/etc/uv/uv.toml", "mode": "ro"},
                    str(_time_server_wheels()): {"bind": WHEELS, "mode": "ro"},
                },
                "tmpfs": EXEC_TMP,
            },
        }
        suffix = base.name.replace("_", "-")
        try:
            for name, spec in specs.items():
                first = pod.containers.get("registry")
                network = {"network_mode": f"container:{first.id}"} if first else {"network_mode": "host"}
                options: dict[str, Any] = {
                    **HARDENED,
                    **network,
                    **spec,
                    "environment": {"JARVIS_LOG_LEVEL": "INFO", **spec["environment"]},
                }
                pod.containers[name] = engine.containers.run(
                    image, ["serve", name], name=f"jarvis-e2e-{name}-{suffix}", detach=True, **options
                )
                if name in pod.ports and name != "aggregator":
                    started = time.monotonic()
                    wait_serving(pod.containers[name], pod.ports[name])
                    pod.serving_seconds[name] = time.monotonic() - started
            started = time.monotonic()
            wait_for_url(f"http://127.0.0.1:{pod.ports['aggregator']}/healthz", timeout=90)
            pod.serving_seconds["aggregator"] = time.monotonic() - started
            yield pod
        except BaseException:
            print(pod.logs(), file=sys.stderr)
            raise
        finally:
            for container in reversed(list(pod.containers.values())):
                with contextlib.suppress(docker.errors.NotFound):
                    container.remove(force=True, v=True)
            remove_instance(engine, instance)


def test_each_container_is_hardened_and_serving(pod: Pod) -> None:
    engine = docker_client()
    labels = engine.images.get(pod.image).labels
    assert labels["org.opencontainers.image.title"] == "Jarvis"
    assert labels["org.opencontainers.image.version"]
    for name, container in pod.containers.items():
        container.reload()
        assert container.status == "running", f"{name}:\n{log_of(container)}"
        host = container.attrs["HostConfig"]
        assert host["ReadonlyRootfs"] is True, name
        assert host["CapDrop"] == ["ALL"], name
        assert "no-new-privileges" in host["SecurityOpt"], name
        assert container.attrs["Config"]["User"] == f"{IMAGE_UID}:{IMAGE_UID}", name
        assert name == "registry" or host["NetworkMode"] == f"container:{pod.containers['registry'].id}", name
    # The root really is read-only for the service's user, and /tmp is writable.
    probe = pod.containers["aggregator"].exec_run(
        ["sh", "-c", "id -u; touch /opt/jarvis/x 2>&1; touch /tmp/x && echo tmp-ok"]
    )
    out = _text(probe.output)
    assert out.splitlines()[0] == str(IMAGE_UID), out
    assert "Read-only file system" in out, out
    assert "tmp-ok" in out, out
    # What the catalog's servers and the runtime need is in the image.
    tools = pod.containers["aggregator"].exec_run(["sh", "-c", "npx --version && uvx --version && git --version"])
    assert tools.exit_code == 0, _text(tools.output)
    print(
        f"\nimage build {pod.build_seconds:.1f} s; start to SERVING: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in pod.serving_seconds.items()),
        file=sys.stderr,
    )


async def test_status_project_analysis_and_a_catalog_server_through_mcp(pod: Pod) -> None:
    async with mcp_client(f"{pod.mcp}/jarvis") as client:
        status = result_json(await client.call_tool("jarvis_check_status", {}))
        assert status["aggregator"]["mode"] == "distributed", status
        for service in ("registry", "debug", "runtime", "scheduler"):
            assert status["services"][service]["ok"] is True, (service, status["services"])
            assert status["services"][service]["detail"] == "SERVING", (service, status["services"])
        assert status["daemons"]["redis"]["ok"] is True, status["daemons"]
        # The registry's own ProjectService, in its container: the image's bundled project template.
        report = result_json(await client.call_tool("jarvis_project", {"action": "analyze", "path": TEMPLATE}))
        assert "python" in [language.lower() for language in report["languages"]], report

        booted = result_json(await client.call_tool("jarvis_system", {"action": "bootstrap"}))
        assert booted["catalog_entries"] > 0, booted
        installed = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "time"}))
        assert installed["launch"]["command"] == "uvx", installed
        await client.call_tool("jarvis_profile", {"action": "create", "name": "clock", "servers": ["time"]})
    # The catalog's `uvx mcp-server-time`, started by the aggregator inside its container (uv reads the
    # mounted /etc/uv/uv.toml: the wheels come from a read-only directory, nothing is downloaded). A profile's first
    # listing waits a bounded time for a server still starting (uv installs it first, slower on a loaded machine);
    # a later listing has its tools, as a client's next one after the list_changed notification does.

    async def listed() -> list[str] | None:
        async with mcp_client(f"{pod.mcp}/profile/clock") as clock:
            tools = [tool.name for tool in (await clock.list_tools()).tools]
        return tools if "time__get_current_time" in tools else None

    try:
        await eventually(listed, timeout=120, what="the time server's tools in the clock profile")
    except AssertionError as exc:
        async with mcp_client(f"{pod.mcp}/jarvis") as admin:
            info = result_json(await admin.call_tool("jarvis_server", {"action": "info", "name": "time"}))
        raise AssertionError(f"{exc}: {info}\n{pod.logs()}") from None
    async with mcp_client(f"{pod.mcp}/profile/clock") as clock:
        answer = await clock.call_tool("time__get_current_time", {"timezone": "UTC"})
    text = text_of(answer)
    assert not answer.is_error, f"{text}\n{pod.logs()}"
    assert '"timezone": "UTC"' in text or "UTC" in text, text
    processes = pod.containers["aggregator"].top(ps_args="-eo pid,args")["Processes"]
    assert any("mcp-server-time" in " ".join(p) for p in processes), processes


async def test_tool_find_ranks_with_both_embedding_models_in_the_aggregators_container(pod: Pod) -> None:
    """MiniLM (its int8 graph written under HOME on the /tmp tmpfs of a read-only root) and WordLlama load in
    the image, so tool_find turns hybrid and finds the debug service's tools for a plain question."""
    async with mcp_client(f"{pod.mcp}/jarvis") as admin:

        async def discovery() -> dict[str, Any]:
            status = result_json(await admin.call_tool("jarvis_check_status", {}))
            return dict(status["discovery"])

        async def hybrid() -> bool:
            return bool((await discovery())["search"] == "hybrid")

        await eventually(hybrid, timeout=180, what="hybrid search in the aggregator's container")
        status = await discovery()
    assert status["model"] == "ready", f"{status}\n{pod.logs()}"
    async with mcp_client(pod.mcp) as client:
        found = result_json(await client.call_tool("tool_find", {"query": "show me the logs of my lambda", "limit": 5}))
    assert found["results"][0]["name"].startswith("debug__cloudwatch_"), found


async def test_a_project_from_a_local_git_source(pod: Pod) -> None:
    async with mcp_client(f"{pod.mcp}/orchestrator") as client:
        created = result_json(
            await client.call_tool(
                "project", {"action": "create", "name": "deployed", "source_url": SOURCE, "image": pod.image}
            )
        )
        project = created["created"]
        assert project["name"] == "deployed", project
        assert project["source_url"] == SOURCE, project
        listed = result_json(await client.call_tool("project", {"action": "list"}))
        assert [p["name"] for p in listed["projects"]] == ["deployed"], listed
    clones = list(pod.runtime_data.glob("projects/*/repo/README.md"))
    assert [c.read_text() for c in clones] == ["# deployed\n"], clones
    assert all(c.stat().st_uid == IMAGE_UID for c in clones)  # written by the runtime's non-root user


def test_every_container_stops_quickly_and_cleanly(pod: Pod) -> None:
    # Run last in this module: it stops the pod. Clients first, the namespace's owner last.
    order = ["aggregator", "scheduler-beat", "scheduler-worker", "scheduler", "runtime", "debug", "registry"]
    stopped = {name: stop_timed(pod.containers[name]) for name in order}
    print("\ndocker stop: " + ", ".join(f"{k} {s:.1f} s (exit {c})" for k, (s, c) in stopped.items()), file=sys.stderr)
    for name, (seconds, code) in stopped.items():
        # 0: the service shut down on SIGTERM; 143: it re-raised SIGTERM after draining (uvicorn does).
        assert code in (0, 143), f"{name} exited {code}:\n{log_of(pod.containers[name])}"
        assert seconds < 10, f"{name} took {seconds:.1f} s to stop (SIGKILL comes at 10 s)"
