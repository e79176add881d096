"""A container image of `@modelcontextprotocol/server-everything` (npm), a real MCP server nobody here wrote.

No registry is reachable, so the image is built `FROM scratch` from what scripts/bootstrap installed under
tools/node: the Node 22 binary with the shared libraries `ldd` says it loads, and server-everything with only
its runtime dependency closure (not the whole 331 MB node_modules).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from tests.support.docker_env import Files, build_once, shared_libraries
from tests.support.downstream import EVERYTHING, NODE, NODE_TOOLS, everything_server

PACKAGE = "@modelcontextprotocol/server-everything"
IMAGE_MODULES = "/opt/node_modules"
IMAGE_NODE = "/opt/node/bin/node"
ENTRYPOINT = [IMAGE_NODE, f"{IMAGE_MODULES}/{PACKAGE}/dist/index.js", "stdio"]
DOCKERFILE = (
    f"FROM scratch\nCOPY rootfs/ /\nUSER 1000:1000\nENV HOME=/tmp\nENTRYPOINT {json.dumps(ENTRYPOINT)}\n"
).encode()
ETC = {
    "etc/passwd": b"root:x:0:0:root:/root:/sbin/nologin\nnode:x:1000:1000:node:/tmp:/sbin/nologin\n",
    "etc/group": b"root:x:0:\nnode:x:1000:\n",
}


def _resolve(package_dir: Path, name: str) -> Path:
    """Node's resolution of `name` required from `package_dir`: its own node_modules, then each ancestor's."""
    for base in (package_dir, *package_dir.parents):
        if base.name != "node_modules" and (base / "node_modules" / name / "package.json").is_file():
            return base / "node_modules" / name
        if base == NODE_TOOLS.parent:
            break
    pytest.fail(f"{name} (a dependency of {package_dir}) is not installed: run scripts/bootstrap")


def dependency_closure(root: Path) -> set[Path]:
    """`root` and every package its package.json "dependencies" need, recursively (dev dependencies excluded)."""
    seen: set[Path] = set()
    todo = [root]
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        manifest = json.loads((package / "package.json").read_text())
        todo.extend(_resolve(package, name) for name in manifest.get("dependencies", {}))
    return seen


def _package_files(package: Path) -> Iterator[tuple[str, Path]]:
    """A package dir whole, except its nested node_modules: the closure adds the nested packages it needs."""
    for directory, subdirs, names in os.walk(package):
        subdirs[:] = sorted(d for d in subdirs if not (Path(directory) == package and d == "node_modules"))
        for name in sorted(names):
            path = Path(directory) / name
            relative = path.relative_to(NODE_TOOLS).as_posix()
            yield f"{IMAGE_MODULES.lstrip('/')}/{relative}", path.resolve()


def image_files() -> Files:
    """Everything the image holds besides the Dockerfile and /etc (skips or fails when tools/node is missing)."""
    everything_server()  # skips, or fails under JARVIS_REQUIRE_ALL=1, when server-everything or Node is missing
    files: Files = {IMAGE_NODE.lstrip("/"): NODE, **shared_libraries(NODE)}
    for package in sorted(dependency_closure(EVERYTHING.parents[1])):
        files.update(_package_files(package))
    return files


def _mode(path: Path) -> int:
    return 0o755 if os.access(path, os.X_OK) else 0o644


def _digest(files: Files) -> str:
    digest = hashlib.sha256(DOCKERFILE + json.dumps(ETC, default=bytes.hex, sort_keys=True).encode())
    for name in sorted(files):
        digest.update(f"\0{name}\0{_mode(files[name]):o}\0".encode())
        with files[name].open("rb") as source:
            digest.update(hashlib.file_digest(source, "sha256").digest())
    return digest.hexdigest()[:12]


def _context(files: Files) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        entries = {"Dockerfile": DOCKERFILE, **{f"rootfs/{name}": data for name, data in ETC.items()}}
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        tmp = tarfile.TarInfo("rootfs/tmp")  # the runtime mounts a tmpfs here; HOME=/tmp
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(tmp)
        for name in sorted(files):
            info = tar.gettarinfo(str(files[name]), f"rootfs/{name}")
            info.mode, info.uid, info.gid, info.uname, info.gname = _mode(files[name]), 0, 0, "root", "root"
            with files[name].open("rb") as source:
                tar.addfile(info, source)
    return buffer.getvalue()


def everything_image(client: docker.DockerClient) -> str:
    """Build (once per content) and return the tag of the server-everything image."""
    files = image_files()
    return build_once(client, f"jarvis-test-everything:{_digest(files)}", lambda: _context(files))
