"""One `ssh -N -R` reverse tunnel kept up while its share lasts: start, watch, restart with backoff, stop.

The ssh client runs from an argv (no shell), ignores every user and system ssh config (`-F /dev/null`),
authenticates only with Jarvis's tunnel key, checks the host strictly against Jarvis's own known_hosts,
dies with Jarvis even when Jarvis is killed, and exits when the forward cannot be set up, so a failure
shows as a state with its reason instead of a tunnel that is connected but forwards nothing. It logs
at debug level, where OpenSSH reports that the forward was accepted; that is how `up` is known.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from dataclasses import dataclass

from jarvis.aggregator.children import dies_with_jarvis
from jarvis.aggregator.tunnel.keys import TunnelKeys, openssh_tool
from jarvis.aggregator.tunnel.spec import SshTarget

log = logging.getLogger(__name__)

CONNECTING, UP, FAILED, STOPPED = "connecting", "up", "failed", "stopped"
BACKOFF_FIRST, BACKOFF_MAX = 1.0, 60.0
STABLE_SECONDS = 30.0  # up this long clears the failure count, so the next drop reconnects fast
_FORWARDED = re.compile(r"remote forward success for: listen (?:[^:,\s]+:)?(\d+),")
_ALLOCATED = re.compile(r"Allocated port (\d+) for remote forward")
# What ssh says about a failure, turned into what the user should do.
_HINTS = (
    (
        "Permission denied",
        "the far side refused Jarvis's tunnel key: add the public key shown by "
        "jarvis_share action=list to ~/.ssh/authorized_keys of that user there",
    ),
    (
        "Host key verification failed",
        "the host's key is not the one trusted for it: if the host was "
        "reinstalled, start the share again with its new host_key",
    ),
    (
        "remote port forwarding failed",
        "the far side would not listen on that port (in use, below 1024, or "
        "AllowTcpForwarding is off there): start the share with another port",
    ),
)


@dataclass(frozen=True)
class TunnelPlan:
    target: SshTarget
    remote_port: int  # 0: the far side chooses
    local_port: int  # the loopback listener that serves only the share's path


class SshTunnel:
    def __init__(self, plan: TunnelPlan, keys: TunnelKeys) -> None:
        self.plan = plan
        self.keys = keys
        self.state = CONNECTING
        self.reason = ""
        self.port: int | None = plan.remote_port or None  # the far side's port, once known
        self.restarts = 0
        self.since = time.time()
        self.retry_at: float | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()  # set once the first attempt is up or has failed

    def argv(self) -> list[str]:
        plan = self.plan
        forward = f"{plan.remote_port}:127.0.0.1:{plan.local_port}"
        return [
            openssh_tool("ssh"),
            "-N",
            "-T",
            "-F",
            "/dev/null",
            "-o",
            "LogLevel=DEBUG1",
            "-i",
            str(self.keys.private_key),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "IdentityAgent=none",
            "-o",
            "BatchMode=yes",
            "-o",
            "PasswordAuthentication=no",
            "-o",
            "KbdInteractiveAuthentication=no",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={self.keys.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "UpdateHostKeys=no",
            "-o",
            "CheckHostIP=no",
            "-o",
            "ExitOnForwardFailure=yes",
            "-o",
            "ServerAliveInterval=15",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ClearAllForwardings=no",
            "-o",
            "ForwardAgent=no",
            "-o",
            "ForwardX11=no",
            "-o",
            "PermitLocalCommand=no",
            "-p",
            str(plan.target.port),
            "-R",
            forward,
            "--",
            plan.target.destination,
        ]

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise(), name=f"tunnel:{self.plan.target}")

    async def settled(self, timeout: float) -> str:
        """The state once the first attempt is up or has failed (or still connecting after `timeout`)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._settled.wait(), timeout)
        return self.state

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._kill()
        self._set(STOPPED, "")

    def _set(self, state: str, reason: str) -> None:
        if state != self.state:
            self.since = time.time()
        self.state, self.reason = state, reason
        if state in (UP, FAILED):
            self._settled.set()

    async def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 5)
            except TimeoutError:
                process.kill()
                await process.wait()

    async def _supervise(self) -> None:
        failures = 0
        while True:
            self.retry_at = None
            self._set(CONNECTING, self.reason)
            started = time.monotonic()
            reason = await self._run_once()
            if self.state == UP and time.monotonic() - started >= STABLE_SECONDS:
                failures = 0
            failures += 1
            self.restarts += 1
            delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (failures - 1))
            self.retry_at = time.time() + delay
            self._set(FAILED, reason)
            log.warning("tunnel to %s dropped (%s); reconnecting in %.0fs", self.plan.target, reason, delay)
            await asyncio.sleep(delay)

    async def _run_once(self) -> str:
        """Run ssh until it exits; why it exited, in words a user can act on."""
        try:
            self._process = await asyncio.create_subprocess_exec(
                *dies_with_jarvis(self.argv()),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return f"ssh could not start: {exc.strerror}"
        said: deque[str] = deque(maxlen=5)  # ssh's last words that are not debug chatter
        assert self._process.stderr is not None
        async for raw in self._process.stderr:
            line = raw.decode(errors="replace").strip()
            found = _FORWARDED.search(line) or _ALLOCATED.search(line)
            if found and found.group(1) != "0":  # with port 0, the allocated port follows on its own line
                self.port = int(found.group(1))
                self._set(UP, "")
            elif line and not line.startswith("debug"):
                said.append(line)
        code = await self._process.wait()
        self._process = None
        return _explain(code, list(said))


def _explain(code: int, said: list[str]) -> str:
    text = " ".join(said)
    for needle, hint in _HINTS:
        if needle in text:
            return f"{said[-1] if said else needle}: {hint}"
    return (said[-1] if said else "") or f"ssh exited with status {code}"
