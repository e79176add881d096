"""Where a project lives on the host, what its container sees, and who may write what.

  <projects>/<project_id>/repo/               the checkout (read-only in the container)
  <projects>/<project_id>/repo/.git/          read-only too: config and hooks run commands on the host
      objects/ refs/ logs/ worktrees/         writable: agents commit in their worktrees
  <projects>/<project_id>/workspaces/<id>/    one per session, writable

In the container the project is at /workspace (repo/ and workspaces/<id>/ below it). When the
runtime runs as root, what agents may write is handed to the container's uid and the rest stays
root's, so even a rename cannot swap a directory the host later runs git in.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from jarvis.common.errors import FailedPrecondition
from jarvis.runtime.domain.ports import Mount

CONTAINER_ROOT = "/workspace"
# Inside the container: a private, size-limited tmpfs (the root filesystem is read-only); also HOME.
CONTAINER_TMP = "/tmp"  # noqa: S108
GIT_WRITABLE = ("objects", "refs", "logs", "worktrees")


class ProjectLayout:
    def __init__(self, projects_dir: Path, project_id: str, container_user: str) -> None:
        self.projects_dir = projects_dir
        self.root = projects_dir / project_id
        self.repo = self.root / "repo"
        self.workspaces = self.root / "workspaces"
        uid, _, gid = container_user.partition(":")
        self._owner = (int(uid), int(gid or uid)) if uid.isdigit() and (gid or uid).isdigit() else None

    @property
    def owner(self) -> tuple[int, int] | None:
        """The (uid, gid) files the container must own are handed to; None when nothing is handed over."""
        return self._owner if os.geteuid() == 0 else None

    def workspace(self, workspace_id: str) -> Path:
        """The host path of a workspace, refusing any path that resolves outside the project (symlinks)."""
        path = self.workspaces / workspace_id
        resolved = path.resolve()
        if resolved.parent != self.workspaces.resolve() or resolved.name != workspace_id:
            raise FailedPrecondition(
                f"workspace {workspace_id} was replaced by a link out of the project; "
                "delete it with workspace action=delete"
            )
        return path

    @staticmethod
    def container_workspace(workspace_id: str) -> str:
        return f"{CONTAINER_ROOT}/workspaces/{workspace_id}"

    @staticmethod
    def container_repo() -> str:
        return f"{CONTAINER_ROOT}/repo"

    def mounts(self, git: bool) -> list[Mount]:
        mounts = [
            Mount(self.repo, self.container_repo(), read_only=True),
            Mount(self.workspaces, f"{CONTAINER_ROOT}/workspaces"),
        ]
        if git:
            mounts.append(Mount(self.repo / ".git", f"{self.container_repo()}/.git", read_only=True))
            mounts += [Mount(self.repo / ".git" / d, f"{self.container_repo()}/.git/{d}") for d in GIT_WRITABLE]
        return mounts

    # ------------------------------------------------------------ preparing and handing over

    def prepare(self, staging: Path, git: bool) -> None:
        """Lay out a freshly cloned (or empty) project in `staging` before it is moved into place."""
        (staging / "repo").mkdir(exist_ok=True)
        (staging / "workspaces").mkdir()
        if git:
            for name in GIT_WRITABLE:
                (staging / "repo" / ".git" / name).mkdir(exist_ok=True)
                self.hand_over(staging / "repo" / ".git" / name)

    def hand_over(self, path: Path) -> None:
        """Give `path` and everything below it to the container's uid (only root can, and only root needs to)."""
        if self._owner is None or os.geteuid() != 0:
            return
        uid, gid = self._owner
        os.lchown(path, uid, gid)
        for parent, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                os.lchown(os.path.join(parent, name), uid, gid)

    def remove(self) -> None:
        remove_tree(self.root)


def remove_tree(path: Path) -> None:
    """Delete a tree an agent wrote into: without following links, fixing permissions it may have removed."""
    if not path.exists() and not path.is_symlink():
        return

    def fix_and_retry(_func: Any, target: str, _exc: Any) -> None:
        parent = os.path.dirname(target)
        try:
            os.chmod(parent, 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)
        except OSError:
            pass

    if path.is_symlink():
        path.unlink()
        return
    shutil.rmtree(path, onerror=fix_and_retry)
