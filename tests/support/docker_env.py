"""The Docker engine tests use (via DOCKER_HOST) and a tiny local image with a stream-json fake agent.

No registry is reachable, so the image is built `FROM scratch` from the host's static busybox.
A test that needs Docker and cannot reach it fails with what to do: it never skips.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container

AGENT = Path(__file__).with_name("fake_agent.sh")
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
DOCKERFILE = b'FROM scratch\nCOPY rootfs/ /\nUSER 1000:1000\nENV PATH=/bin HOME=/tmp\nCMD ["sh"]\n'


def docker_host() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def docker_client() -> docker.DockerClient:
    """A client of the test engine, or a failure that says how to start one."""
    host = docker_host()
    try:
        client = docker.DockerClient(base_url=host, version="auto", timeout=120)
        client.ping()
    except Exception as exc:
        pytest.fail(
            f'no Docker engine at {host} ({exc.__class__.__name__}); run `eval "$(scripts/dockerd)"` '
            "(needs apt-get install docker.io busybox-static) so DOCKER_HOST points at it"
        )
    return client


# Image path (without the leading "/") -> the host file whose real contents go there.
Files = dict[str, Path]


def shared_libraries(binary: Path) -> Files:
    """The loader and libraries `binary` needs, at the paths the loader looks for them (`ldd` on this host)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    files: Files = {}
    for line in out.splitlines():
        # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)";
        # the vDSO has no file.
        path = line.split("=>")[-1].split("(")[0].strip()
        if path.startswith("/"):
            files[path.lstrip("/")] = Path(path).resolve()  # follow symlinks: the image gets real bytes
    if not any("ld-linux" in name for name in files):
        pytest.fail(f"ldd found no dynamic loader for {binary}:\n{out}")
    return files


def _busybox() -> Path:
    for candidate in BUSYBOX_CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    pytest.fail("no static busybox on this machine: apt-get install busybox-static")


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _context(busybox: bytes, agent: bytes, extra: Files | None = None) -> bytes:
    """The image's build context; `extra` maps image paths (no leading "/") to host files copied there."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add(tar, "Dockerfile", DOCKERFILE)
        _add(tar, "rootfs/bin/busybox", busybox, 0o755)
        _add(tar, "rootfs/bin/fake-agent", agent, 0o755)
        for name, path in sorted((extra or {}).items()):
            _add(tar, f"rootfs/{name}", path.read_bytes(), 0o755)
        for applet in (
            "sh",
            "sed",
            "cat",
            "echo",
            "printf",
            "sleep",
            "kill",
            "ls",
            "id",
            "mkdir",
            "rm",
            "head",
            "yes",
            "true",
            "false",
            "env",
            "pwd",
            "touch",
            "seq",
            "dd",
            "wc",
            "ps",
            "grep",
            "whoami",
            "wget",
            "nc",
        ):
            link = tarfile.TarInfo(f"rootfs/bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        _add(tar, "rootfs/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/tmp:/bin/sh\n")
        _add(tar, "rootfs/etc/group", b"root:x:0:\nagent:x:1000:\n")
        tmp = tarfile.TarInfo("rootfs/tmp")
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(tmp)
    return buffer.getvalue()


def agent_image(client: docker.DockerClient) -> str:
    """Build (once per content) and return the tag of the fake-agent image."""
    busybox, agent = _busybox().read_bytes(), AGENT.read_bytes()
    digest = hashlib.sha256(DOCKERFILE + busybox + agent).hexdigest()[:12]
    return build_once(client, f"jarvis-test-agent:{digest}", lambda: _context(busybox, agent))


def egress_agent_image(client: docker.DockerClient) -> str:
    """The fake-agent image plus the host's socat (the egress bridge) with the libraries it loads."""
    socat = shutil.which("socat")
    if socat is None:
        pytest.fail("socat is not installed (the egress bridge): apt-get install socat")
    busybox, agent = _busybox().read_bytes(), AGENT.read_bytes()
    extra = {"bin/socat": Path(socat).resolve(), **shared_libraries(Path(socat))}
    digest = hashlib.sha256(DOCKERFILE + busybox + agent)
    for name in sorted(extra):
        digest.update(name.encode() + extra[name].read_bytes())
    return build_once(client, f"jarvis-test-egress:{digest.hexdigest()[:12]}", lambda: _context(busybox, agent, extra))


def build_once(client: docker.DockerClient, tag: str, context: Callable[[], bytes]) -> str:
    """Build `tag` from the tar `context()` unless the engine has it (tags name their content); no network."""
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        client.images.build(
            fileobj=io.BytesIO(context()), custom_context=True, tag=tag, rm=True, network_mode="none", pull=False
        )
    return tag


def git_available() -> str:
    git = shutil.which("git")
    if git is None:
        pytest.fail("git is not installed: apt-get install git")
    return git


def instance_of(data_dir: Path) -> str:
    """The container label value of the runtime embedded in a `jarvis up` on `data_dir`."""
    url = f"sqlite:///{data_dir.resolve() / 'runtime' / 'runtime.db'}"
    return hashlib.sha256(url.encode()).hexdigest()[:12]


def managed(engine: docker.DockerClient, data_dir: Path) -> list[Container]:
    return instance_containers(engine, instance_of(data_dir))


def instance_containers(engine: docker.DockerClient, instance: str) -> list[Container]:
    return engine.containers.list(all=True, filters={"label": f"jarvis.runtime.instance={instance}"})


def remove_instance(engine: docker.DockerClient, instance: str) -> None:
    """Remove every container one runtime instance made (test clean-up, even after a failure)."""
    for container in instance_containers(engine, instance):
        container.remove(force=True)


def remove_managed(engine: docker.DockerClient, data_dir: Path) -> None:
    remove_instance(engine, instance_of(data_dir))


PRESETS_DIR = Path(__file__).with_name("fake_presets")


def preset_image(client: docker.DockerClient) -> str:
    """The fake-agent image plus a fake of each preset's CLI (claude, codex, gemini, opencode, aider) on PATH.

    Each fake checks its command line and its API key variable, then prints that CLI's own events. It has the
    egress bridge (socat): a preset's model hosts are on its project's allowlist, so its container runs one.
    """
    base = egress_agent_image(client)
    scripts = {p.name: p.read_bytes() for p in sorted(PRESETS_DIR.iterdir())}
    dockerfile = f"FROM {base}\nCOPY bin/ /bin/\n".encode()
    digest = hashlib.sha256(dockerfile + b"".join(n.encode() + s for n, s in scripts.items())).hexdigest()[:12]

    def context() -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            _add(tar, "Dockerfile", dockerfile)
            for name, script in scripts.items():
                _add(tar, f"bin/{name}", script, 0o755)
        return buffer.getvalue()

    return build_once(client, f"jarvis-test-presets:{digest}", context)
