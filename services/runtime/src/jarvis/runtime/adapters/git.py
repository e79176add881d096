"""git on the runtime's host: argv only, and never trusting what an agent could have written.

Agents write inside workspaces, so every host-side git call:
- reads no system or global config, disables hooks and fsmonitor (both run commands);
- names the worktree's git dir and the common dir explicitly instead of following `.git` files
  or `commondir` pointers an agent could redirect;
- diffs without external diff drivers or textconv.
The repository's own config is mounted read-only into containers, so an agent cannot add
filter or diff drivers to it either (see domain/layout.py).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from jarvis.common.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument
from jarvis.common.urls import masked_url
from jarvis.runtime.domain.egress_policy import choose
from jarvis.runtime.domain.models import Changes

log = logging.getLogger(__name__)

SAFE_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "safe.directory=*",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "core.sshCommand=ssh -o BatchMode=yes",
)
ALLOWED_PROTOCOLS = "file:https:ssh"


# What follows a URL's userinfo: a name, an IPv4 or a bracketed IPv6 literal, and a port. Nothing git, curl or ssh
# could read as another host than urlsplit does (a backslash, a second '@', a zone id), nor a shell's metacharacter
# (the name reaches core.sshCommand as ssh's HostKeyAlias).
_HOST_PORT = re.compile(r"(?:[a-z0-9._-]+|\[[0-9a-f:.]+\])(?::[0-9]*)?")


def remote_target(source: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an https:// or ssh:// source; None for a local one."""
    parsed = urlsplit(source)
    if parsed.scheme not in ("https", "ssh") or not parsed.hostname:
        return None
    userinfo, _, host_port = parsed.netloc.rpartition("@")
    if not _HOST_PORT.fullmatch(host_port.lower()) or "@" in userinfo or "\\" in userinfo:
        raise InvalidArgument(
            f"source_url '{masked_url(source)[:200]}' does not name a host plainly: give "
            "https://host[:port]/path or ssh://[user@]host[:port]/path with a host name or an IP address"
        )
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 22)
    except ValueError:
        raise InvalidArgument(f"source_url '{masked_url(source)[:200]}' has a port that is no port number") from None
    return parsed.scheme, parsed.hostname.lower().rstrip("."), port


class HostGit:
    """The Git port, running the `git` executable found on PATH.

    `home` is git's HOME (ssh's known_hosts, credential helpers' files): a directory of the runtime's own,
    so that neither the runtime user's real home nor a writable temporary directory is needed; a
    container may run with a read-only root and no /tmp.
    """

    def __init__(self, home: Path, executable: str = "git", internal_hosts: Iterable[str] = ()) -> None:
        self._git = shutil.which(executable) or executable
        self._internal_hosts = frozenset(internal_hosts)  # names an admin allowed to resolve to internal addresses
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._home = str(home)
        # The one config git reads besides the repository's: `-c safe.directory=*` does not reach the
        # upload-pack that a local clone runs, which then refuses a source owned by another user (an
        # operator's checkout mounted into the runtime's container); a global config does reach it.
        self._config = home / "gitconfig"
        self._config.write_text("[safe]\n\tdirectory = *\n")

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self._home,
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(self._config),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
            "GIT_AUTHOR_NAME": "Jarvis",
            "GIT_AUTHOR_EMAIL": "jarvis@localhost",
            "GIT_COMMITTER_NAME": "Jarvis",
            "GIT_COMMITTER_EMAIL": "jarvis@localhost",
        }
        env.update(extra or {})
        return env

    def _run(
        self, args: list[str], *, env: dict[str, str] | None = None, timeout: float = 60, what: str
    ) -> subprocess.CompletedProcess[bytes]:
        try:
            done = subprocess.run(  # noqa: S603
                [self._git, *SAFE_CONFIG, *args],
                capture_output=True,
                timeout=timeout,
                env=self._env(env),
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise DeadlineExceeded(f"{what} took longer than {timeout:.0f} s and was stopped") from exc
        except FileNotFoundError as exc:
            raise FailedPrecondition(f"{what}: git is not installed on the Jarvis host (apt-get install git)") from exc
        if done.returncode != 0:
            lines = [ln for ln in done.stderr.decode(errors="replace").splitlines() if ln.strip()]
            detail = lines[-1].strip() if lines else f"exit code {done.returncode}"
            raise FailedPrecondition(f"{what} failed: {detail}")
        return done

    @staticmethod
    def _worktree_env(repo: Path, name: str, path: Path) -> dict[str, str]:
        return {
            "GIT_DIR": str(repo / ".git" / "worktrees" / name),
            "GIT_COMMON_DIR": str(repo / ".git"),
            "GIT_WORK_TREE": str(path),
        }

    def clone(self, source: str, target: Path, timeout: float) -> None:
        """Clone `source` to `target`. A remote source (https://, ssh://) is reached only at an address its name
        resolves to that is public (or the name is one an admin allowed in egress_internal_hosts), the same rules
        as the egress proxy's, and git is pinned to that address; its failure says nothing of what answered."""
        remote = remote_target(source)
        pinned = self._pin(*remote) if remote is not None else []
        # --no-hardlinks: a local source's object files must not be shared (they are chowned later).
        try:
            self._run(
                [*pinned, "clone", "--quiet", "--no-hardlinks", "--", source, str(target)],
                timeout=timeout,
                what=f"cloning '{masked_url(source)}'",
            )
        except FailedPrecondition as exc:
            if remote is None:
                raise InvalidArgument(
                    f"{exc.message}; check that source_url names a git repository this host can "
                    "read (a local path, file://, https:// or ssh://)"
                ) from exc
            # Whether a port was closed, filtered or answered in another protocol stays in the log: an error that
            # told them apart would make project create a port scanner.
            log.warning("clone of a remote source failed", extra={"source": masked_url(source), "detail": exc.message})
            raise InvalidArgument(
                f"could not clone '{masked_url(source)}': the repository could not be read (it does not exist, is "
                "not reachable from the Jarvis host, or needs credentials this host does not have)"
            ) from None

    def _pin(self, scheme: str, host: str, port: int) -> list[str]:
        """git's options that make it connect to the address checked here, not to one a second lookup gives."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            infos = []
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        address = choose(addresses, host in self._internal_hosts)
        if address is None:
            raise InvalidArgument(
                f"source_url's host {host} does not resolve, or resolves to an internal address (loopback, "
                "private, link-local or metadata); an admin can allow the name in the runtime setting "
                "egress_internal_hosts"
            )
        if scheme == "https":
            literal = f"[{address}]" if address.version == 6 else str(address)
            # No redirects: a Location naming another host (https://10.0.0.1/...) would be connected to unchecked.
            return ["-c", f"http.curloptResolve={host}:{port}:{literal}", "-c", "http.followRedirects=false"]
        return ["-c", f"core.sshCommand=ssh -o BatchMode=yes -o HostName={address} -o HostKeyAlias={host}"]

    def add_worktree(self, repo: Path, path: Path, branch: str) -> None:
        git_dir = str(repo / ".git")
        self._run(
            [
                "--git-dir",
                git_dir,
                "--work-tree",
                str(repo),
                "worktree",
                "add",
                "--quiet",
                "--lock",
                "-b",
                branch,
                "--",
                str(path),
                "HEAD",
            ],
            what="creating the workspace's worktree",
        )
        # A relative pointer works on this host and inside the container, where the project is elsewhere.
        relative = os.path.relpath(repo / ".git" / "worktrees" / path.name, path)
        (path / ".git").write_text(f"gitdir: {relative}\n")

    def remove_worktree(self, repo: Path, path: Path, name: str) -> None:
        shutil.rmtree(path, ignore_errors=True)
        metadata = repo / ".git" / "worktrees" / name
        shutil.rmtree(metadata, ignore_errors=True)

    def changes(self, repo: Path, path: Path, name: str, max_bytes: int) -> Changes:
        env = self._worktree_env(repo, name, path)
        status = (
            self._run(
                ["status", "--porcelain=v1", "-b", "--untracked-files=all"],
                env=env,
                what="reading the workspace's git status",
            )
            .stdout.decode(errors="replace")
            .splitlines()
        )
        branch = status[0][3:].split("...")[0] if status and status[0].startswith("## ") else ""
        diff = self._run(
            ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "HEAD", "--"],
            env=env,
            what="diffing the workspace",
        ).stdout
        return Changes(
            workspace_id=name,
            branch=branch,
            status=[s for s in status if not s.startswith("## ")],
            diff=diff[:max_bytes].decode(errors="replace"),
            truncated=len(diff) > max_bytes,
        )
