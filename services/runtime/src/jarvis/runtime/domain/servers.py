"""MCP server images run as hardened containers whose stdio is attached to one caller (`docker run -i`).

A server container lives exactly as long as its caller's stream: it is removed when it exits, when
the caller goes away, and, at the runtime's start, when a previous runtime process left it behind
(nobody holds its stdio any more).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator

from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError
from jarvis.runtime.domain.deps import LABEL_SERVER, Deps
from jarvis.runtime.domain.layout import CONTAINER_TMP
from jarvis.runtime.domain.models import ServerExited, ServerLaunch, ServerOutput, ServerStarted
from jarvis.runtime.domain.ports import AttachedStream, ContainerSpec
from jarvis.runtime.domain.validate import check_args, check_env, check_image, check_name

log = logging.getLogger(__name__)

EXIT_WAIT_SECONDS = 5.0  # the output ends as the container stops; its exit code follows shortly
ROOT_USERS = ("", "0", "root")  # the user part of an image's `USER user[:group]`


def check_launch(launch: ServerLaunch) -> ServerLaunch:
    image = check_image(launch.image)
    if not image:
        raise InvalidArgument("image is required: the MCP server image to run (e.g. 'ghcr.io/org/server:1.0')")
    return ServerLaunch(
        server=check_name(launch.server, "server"),
        image=image,
        args=tuple(check_args(launch.args, "args")),
        env=check_env(launch.env),
    )


class Servers:
    """The server containers this runtime process holds the stdio of."""

    def __init__(self, deps: Deps) -> None:
        self._d = deps
        self._live: dict[str, AttachedServer] = {}
        self._lock = threading.Lock()

    def spec(self, launch: ServerLaunch, image_user: str) -> ContainerSpec:
        s = self._d.settings
        # The image's own non-root user knows its files; an image that would run as root gets the runtime's user.
        user = image_user if image_user.split(":")[0] not in ROOT_USERS else s.container_user
        name = f"jarvis-{s.instance}-srv-{launch.server}-{secrets.token_hex(3)}"  # several callers may run one server
        return ContainerSpec(
            name=name,
            image=launch.image,
            labels={**self._d.labels(), LABEL_SERVER: launch.server},
            mounts=[],
            user=user,
            network=s.server_network,
            memory=s.memory,
            cpus=s.cpus,
            pids=s.pids,
            tmpfs_size=s.tmpfs_size,
            # HOME on the tmpfs: the root filesystem is read-only, and servers (npm, uv) write caches there.
            workdir="",
            env={"HOME": CONTAINER_TMP, **launch.env},
            stdin=True,
        )

    def attach(self, launch: ServerLaunch) -> AttachedServer:
        """Create the container, attach to its stdio, start it; nothing is left behind when a step fails."""
        launch = check_launch(launch)
        engine = self._d.engine
        image_user = engine.image_user(launch.image)
        if image_user is None:
            raise FailedPrecondition(
                f"image '{launch.image}' is not on the Docker engine at {engine.host}, and the runtime never pulls "
                f"images; put it there (`docker pull {launch.image}` where a registry is reachable, `docker load` "
                "or `docker build`), then start the server again"
            )
        spec = self.spec(launch, image_user)
        container_id = engine.create(spec, launch.args)
        try:
            stream = engine.attach(container_id)  # before the start: no output is missed
            try:
                engine.start(container_id)
            except BaseException:
                stream.close()
                raise
        except BaseException:
            with contextlib.suppress(JarvisError):
                engine.remove(container_id)
            raise
        attached = AttachedServer(
            self._d, ServerStarted(container_id, spec.name, launch.image), launch.server, stream, self._forget
        )
        with self._lock:
            self._live[container_id] = attached
        log.info("server container started", extra={"server": launch.server, "container": spec.name})
        return attached

    def _forget(self, container_id: str) -> None:
        with self._lock:
            self._live.pop(container_id, None)

    def reap(self) -> list[str]:
        """Remove this instance's server containers that no live stream holds (left by a previous process)."""
        with self._lock:
            live = set(self._live)
        removed = []
        for container in self._d.engine.list_managed(self._d.labels()):
            if LABEL_SERVER in container.labels and container.id not in live:
                self._d.engine.remove(container.id)
                removed.append(container.name or container.id[:12])
        if removed:
            log.warning("removed server containers left by a previous runtime", extra={"containers": removed})
        return removed

    def close_all(self) -> None:
        with self._lock:
            live = list(self._live.values())
        for attached in live:
            attached.close()


class AttachedServer:
    """One running server container and its caller's stream; `close()` from any thread ends both."""

    def __init__(
        self, deps: Deps, started: ServerStarted, server: str, stream: AttachedStream, on_closed: Callable[[str], None]
    ) -> None:
        self._d = deps
        self.started = started
        self.server = server
        self._stream = stream
        self._on_closed = on_closed
        self._output_ended = threading.Event()
        self._closed = False
        self._close_lock = threading.Lock()
        self._stopped_for = ""

    def run(self, inputs: Iterable[bytes | None]) -> Iterator[ServerOutput | ServerExited]:
        """Feed `inputs` to stdin (None or their end closes it); yield the output, then how the container ended."""
        feeder = threading.Thread(target=self._feed, args=(inputs,), name=f"server-stdin-{self.server}", daemon=True)
        feeder.start()
        try:
            for frames in self._stream.chunks():
                yield from _merged(frames)
            self._output_ended.set()
            yield self._exit()
        finally:
            self._output_ended.set()
            self.close()

    def _feed(self, inputs: Iterable[bytes | None]) -> None:
        try:
            for data in inputs:
                if data is None:
                    break
                self._stream.write(data)
        except OSError:
            pass  # the container's input is gone (it exited or was removed); run() reports how it ended
        self._stream.close_stdin()
        # An MCP server exits when its input closes; one that does not is stopped after the grace period.
        grace = self._d.settings.session_end_grace_seconds
        if not self._output_ended.wait(grace):
            self._stopped_for = f"it did not exit within {grace} s of its input closing, so it was stopped"
            with contextlib.suppress(JarvisError):
                self._d.engine.stop(self.started.container_id, grace)

    def _exit(self) -> ServerExited:
        state = self._d.engine.exit_state(self.started.container_id, EXIT_WAIT_SECONDS)
        if state.oom_killed:
            detail = f"it ran out of memory (limit {self._d.settings.memory}) and was killed"
        else:
            detail = self._stopped_for or state.error
        return ServerExited(
            exit_code=-1 if state.exit_code is None else state.exit_code, oom_killed=state.oom_killed, detail=detail
        )

    def close(self) -> None:
        """Stop reading and remove the container (it cannot outlive its caller); idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._stream.close()
        try:
            self._d.engine.remove(self.started.container_id)
        except JarvisError as exc:
            log.warning(
                "could not remove server container %s: %s",
                self.started.container_name,
                exc.message,
                extra={"server": self.server, "container": self.started.container_name},
            )
        self._on_closed(self.started.container_id)
        log.info("server container removed", extra={"server": self.server, "container": self.started.container_name})


def _merged(frames: list[tuple[str, bytes]]) -> Iterator[ServerOutput]:
    """Consecutive frames of one stream as one chunk: fewer, larger messages to the caller."""
    stream, data = "", bytearray()
    for kind, chunk in frames:
        if kind != stream and data:
            yield ServerOutput(stream, bytes(data))
            data.clear()
        stream = kind
        data += chunk
    if data:
        yield ServerOutput(stream, bytes(data))
