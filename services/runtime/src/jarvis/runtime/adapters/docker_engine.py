"""The Engine port on a real Docker engine, through the Docker SDK (plus raw exec streams)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.types import Mount as DockerMount

from jarvis.common.errors import FailedPrecondition, JarvisError, NotFound, Unavailable
from jarvis.runtime.adapters.exec_stream import (
    EXEC_MARKER,
    REAP_MARKED,
    WRAPPER,
    FrameReader,
    LineSplitter,
    open_attach,
    open_exec,
    take_pid,
)
from jarvis.runtime.adapters.processes import DockerAgentProcess, DockerAttachedStream, collect_output
from jarvis.runtime.domain.agent_image import missing_image_hint
from jarvis.runtime.domain.layout import CONTAINER_TMP
from jarvis.runtime.domain.models import ContainerInfo, ExecResult, ExitState
from jarvis.runtime.domain.ports import AgentProcess, AttachedStream, ContainerSpec

log = logging.getLogger(__name__)

MAX_LINE = 1024 * 1024
KILLED = 137


class DockerEngine:
    """A lazily connected Docker client: Jarvis starts even when the engine is down, and says so per call."""

    def __init__(self, host: str, api_timeout: float = 60.0) -> None:
        self.host = host
        self._timeout = api_timeout
        self._client: docker.DockerClient | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ connection

    def _unreachable(self, exc: BaseException) -> Unavailable:
        return Unavailable(
            f"the Docker engine at {self.host} is unreachable ({type(exc).__name__}); start it "
            "(`scripts/dockerd` for a private engine, or `systemctl start docker`) or point DOCKER_HOST at a "
            "running engine, then retry"
        )

    @property
    def client(self) -> docker.DockerClient:
        with self._lock:
            if self._client is None:
                try:
                    self._client = docker.DockerClient(base_url=self.host, version="auto", timeout=int(self._timeout))
                except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
                    raise self._unreachable(exc) from exc
            return self._client

    @contextlib.contextmanager
    def _calls(self, what: str) -> Iterator[None]:
        """The one place Docker SDK errors become domain errors a person can act on."""
        try:
            yield
        except JarvisError:
            raise
        except docker.errors.ImageNotFound as exc:
            raise FailedPrecondition(
                f"{what}: the image does not exist on the Docker engine at {self.host}; "
                f"{missing_image_hint()}, then retry"
            ) from exc
        except docker.errors.NotFound as exc:
            raise NotFound(f"{what}: {exc.explanation or 'not found'}") from exc
        except docker.errors.APIError as exc:
            raise FailedPrecondition(f"{what}: the Docker engine refused: {exc.explanation or exc}") from exc
        except (requests.exceptions.RequestException, docker.errors.DockerException, OSError) as exc:
            with self._lock:
                self._client = None  # reconnect next time: the engine may come back
            raise self._unreachable(exc) from exc

    def ping(self) -> None:
        with self._calls("ping"):
            self.client.ping()

    # ------------------------------------------------------------ images and containers

    def image_exists(self, image: str) -> bool:
        with self._calls(f"looking up image '{image}'"):
            try:
                self.client.images.get(image)
            except docker.errors.ImageNotFound:
                return False
            return True

    def image_user(self, image: str) -> str | None:
        with self._calls(f"looking up image '{image}'"):
            try:
                config = self.client.images.get(image).attrs.get("Config") or {}
            except docker.errors.ImageNotFound:
                return None
            return str(config.get("User") or "")

    def list_managed(self, labels: dict[str, str]) -> list[ContainerInfo]:
        with self._calls("listing containers"):
            found = self.client.api.containers(all=True, filters={"label": [f"{k}={v}" for k, v in labels.items()]})
            return [
                ContainerInfo(
                    id=c["Id"],
                    name=(c.get("Names") or [""])[0].lstrip("/"),
                    image=c.get("Image", ""),
                    state=c.get("State", ""),
                    labels=dict(c.get("Labels") or {}),
                )
                for c in found
            ]

    def inspect(self, container_id: str) -> ContainerInfo | None:
        with self._calls("inspecting a container"):
            try:
                data: dict[str, Any] = self.client.api.inspect_container(container_id)
            except docker.errors.NotFound:
                return None
        config, host = data.get("Config") or {}, data.get("HostConfig") or {}
        return ContainerInfo(
            id=data["Id"],
            name=data.get("Name", "").lstrip("/"),
            image=config.get("Image", ""),
            state=(data.get("State") or {}).get("Status", ""),
            user=config.get("User", ""),
            network=host.get("NetworkMode", "none") != "none",
            labels=dict(config.get("Labels") or {}),
        )

    def create(self, spec: ContainerSpec, command: Sequence[str]) -> str:
        with self._calls(f"creating container from image '{spec.image}'"):
            # No command: the image's own (docker-py would send an empty one, which some engines refuse).
            # With stdin, the engine keeps stdin open for the one client that attaches (`docker run -i`).
            container = self.client.containers.create(
                spec.image,
                list(command) or None,
                name=spec.name,
                labels=spec.labels,
                user=spec.user,
                working_dir=spec.workdir or None,
                environment=spec.env,
                detach=not spec.stdin,
                stdin_open=spec.stdin,
                tty=False,
                mounts=[DockerMount(m.target, str(m.source), type="bind", read_only=m.read_only) for m in spec.mounts],
                network_mode=spec.network,
                mem_limit=spec.memory,
                memswap_limit=spec.memory,
                nano_cpus=int(spec.cpus * 1e9),
                pids_limit=spec.pids,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges:true"],
                read_only=True,
                init=True,
                tmpfs={CONTAINER_TMP: f"rw,nosuid,nodev,size={spec.tmpfs_size},mode=1777"},
            )
            return str(container.id)

    def start(self, container_id: str) -> None:
        with self._calls("starting the container"):
            self.client.api.start(container_id)

    def stop(self, container_id: str, grace_seconds: int) -> None:
        with self._calls("stopping the container"):
            self.client.api.stop(container_id, timeout=grace_seconds)

    def remove(self, container_id: str) -> None:
        with self._calls("removing the container"), contextlib.suppress(docker.errors.NotFound):
            self.client.api.remove_container(container_id, force=True, v=True)

    def attach(self, container_id: str) -> AttachedStream:
        with self._calls("attaching to the container"):
            api_base = f"/v{self.client.api.api_version}"
        sock, initial = open_attach(self.host, api_base, container_id)
        return DockerAttachedStream(sock, FrameReader(sock, initial))

    def exit_state(self, container_id: str, wait: float) -> ExitState:
        deadline = time.monotonic() + wait
        while True:
            with self._calls("reading an exit code"):
                try:
                    state: dict[str, Any] = self.client.api.inspect_container(container_id).get("State") or {}
                except docker.errors.NotFound:
                    return ExitState(exit_code=None, error="the container was removed")
            if not state.get("Running") or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if state.get("Running"):
            return ExitState(exit_code=None)
        return ExitState(
            exit_code=int(state.get("ExitCode", -1)),
            oom_killed=bool(state.get("OOMKilled")),
            error=str(state.get("Error") or ""),
        )

    def logs(self, container_id: str, tail: int, since: int) -> str:
        with self._calls("reading container logs"):
            raw: bytes = self.client.api.logs(
                container_id, stdout=True, stderr=True, tail=tail or "all", since=since or None, timestamps=True
            )
            return raw.decode("utf-8", errors="replace")

    # ------------------------------------------------------------ processes inside a container

    def _exec_create(
        self,
        container_id: str,
        argv: Sequence[str],
        workdir: str,
        user: str,
        env: dict[str, str] | None = None,
        stdin: bool = False,
    ) -> str:
        with self._calls("starting a process in the container"):
            created = self.client.api.exec_create(
                container_id,
                [*WRAPPER, *argv],
                stdout=True,
                stderr=True,
                stdin=stdin,
                workdir=workdir,
                user=user,
                environment=env,
            )
            return str(created["Id"])

    def _open(self, exec_id: str) -> tuple[Any, bytes]:
        # "/v1.41": the path prefix of the API version the client negotiated.
        return open_exec(self.host, f"/v{self.client.api.api_version}", exec_id)

    def exec_exit_code(self, exec_id: str, wait: float = 5.0) -> int | None:
        deadline = time.monotonic() + wait
        while True:
            with self._calls("reading an exit code"):
                info = self.client.api.exec_inspect(exec_id)
            if not info.get("Running") or time.monotonic() >= deadline:
                code = info.get("ExitCode")
                return None if info.get("Running") or code is None else int(code)
            time.sleep(0.02)

    def exec(
        self, container_id: str, argv: Sequence[str], *, workdir: str, user: str, timeout: float, max_output: int
    ) -> ExecResult:
        started = time.perf_counter()
        exec_id = self._exec_create(container_id, argv, workdir, user)
        sock, initial = self._open(exec_id)
        try:
            out = collect_output(FrameReader(sock, initial), time.monotonic() + timeout, max_output)
        finally:
            # Closed before any kill: an unread stream stalls the engine's copying for the whole container.
            sock.close()
        killed = out.timed_out or out.truncated
        if killed:
            self.kill_group(container_id, out.pid, user)
        # A killed command reports 128 + SIGKILL, as a shell would (the engine's own code for it varies).
        code = KILLED if killed else self.exec_exit_code(exec_id)
        return ExecResult(
            exit_code=-1 if code is None else code,
            stdout=out.stdout,
            stderr=out.stderr,
            timed_out=out.timed_out,
            truncated=out.truncated,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )

    def spawn(
        self, container_id: str, argv: Sequence[str], *, workdir: str, user: str, env: dict[str, str]
    ) -> AgentProcess:
        exec_id = self._exec_create(container_id, argv, workdir, user, env, stdin=True)
        sock, initial = self._open(exec_id)
        reader, splitter = FrameReader(sock, initial), LineSplitter(MAX_LINE)
        pid, early = take_pid(reader, splitter, time.monotonic() + 15)
        if not pid:
            sock.close()
            detail = b" ".join(line for _, line in early)[:300].decode(errors="replace")
            raise FailedPrecondition(
                "the agent process did not start in the container"
                f"{': ' + detail if detail else ''}; the image needs a POSIX `sh`"
            )
        return DockerAgentProcess(sock, reader, splitter, pid, early, lambda: self.exec_exit_code(exec_id, 2.0))

    def exec_detached(self, container_id: str, argv: Sequence[str], *, user: str) -> str:
        with self._calls("starting a background process in the container"):
            exec_id = str(self.client.api.exec_create(container_id, list(argv), user=user)["Id"])
            self.client.api.exec_start(exec_id, detach=True)
            return exec_id

    def kill_group(self, container_id: str, pid: int, user: str) -> None:
        """SIGKILL the process group `pid` leads inside the container (an exec and all it forked)."""
        if pid <= 1:
            return
        with self._calls("stopping a process"), contextlib.suppress(docker.errors.APIError):
            exec_id = self.client.api.exec_create(
                container_id,
                [
                    "sh",
                    "-c",
                    'kill -KILL "-$1" 2>/dev/null || kill -KILL "$1"; rm -f "$2$1"',
                    "kill",
                    str(pid),
                    EXEC_MARKER,
                ],
                user=user,
            )["Id"]
            # Detached: an attached start can wait on the engine's streams of the process being killed.
            self.client.api.exec_start(exec_id, detach=True)
            self.exec_exit_code(exec_id, 5.0)

    def kill_marked(self, container_id: str, user: str) -> int:
        """SIGKILL every exec group still marked in the container (their runtime died); how many there were."""
        with self._calls("stopping processes left by a previous runtime"):
            exec_id = self.client.api.exec_create(container_id, ["sh", "-c", REAP_MARKED], user=user)["Id"]
            out = self.client.api.exec_start(exec_id)
        text = out.decode(errors="replace").strip() if isinstance(out, bytes) else ""
        return int(text) if text.isdigit() else 0

    # ------------------------------------------------------------ images

    def build(
        self,
        context: Path,
        dockerfile: str,
        tag: str,
        timeout: float,
        on_line: Callable[[str], None],
        *,
        network: str = "none",
        build_args: dict[str, str] | None = None,
        no_cache: bool = False,
    ) -> None:
        deadline = time.monotonic() + timeout
        with self._calls(f"building {tag}"):
            # By default no network for build steps, like the containers themselves; the base image must be local.
            for chunk in self.client.api.build(
                path=str(context),
                dockerfile=dockerfile,
                tag=tag,
                rm=True,
                forcerm=True,
                network_mode=network,
                decode=True,
                pull=False,
                buildargs=build_args or None,
                nocache=no_cache,
            ):
                if "stream" in chunk or "status" in chunk:
                    for line in str(chunk.get("stream") or chunk.get("status")).splitlines():
                        if line.strip():
                            on_line(line)
                if "error" in chunk:
                    raise FailedPrecondition(f"building {tag} failed: {str(chunk['error']).strip()}")
                if time.monotonic() > deadline:
                    raise FailedPrecondition(f"building {tag} took longer than {timeout:.0f} s; stopped waiting")
