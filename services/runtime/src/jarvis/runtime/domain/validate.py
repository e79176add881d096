"""Checks on everything a caller sends before it reaches a path, an argv or the engine."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from jarvis.common.errors import InvalidArgument, NotFound
from jarvis.common.roots import confine
from jarvis.runtime.domain.models import PROTOCOLS

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
_IDS = {"project": "p", "workspace": "w", "session": "s", "build": "b"}
_ID = re.compile(r"^[pwsb][0-9a-f]{12}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:@-]{0,254}$")
SOURCE_SCHEMES = ("local path", "file://", "https://", "ssh://")
MAX_ARGS = 1000
MAX_ARG_BYTES = 128 * 1024


def new_id(kind: str) -> str:
    """`p`, `w`, `s` or `b` and 12 hex digits: safe in paths, branch names and container names."""
    return _IDS[kind] + secrets.token_hex(6)


def check_id(kind: str, value: str) -> str:
    """The id, or NotFound: a malformed id can name nothing (and never reaches a path)."""
    value = (value or "").strip()
    if not value:
        raise InvalidArgument(f"{kind}_id is required")
    if not _ID.match(value) or value[0] != _IDS[kind]:
        raise NotFound(f"{kind} '{value[:80]}' not found; list them with {_lister(kind)}")
    return value


def _lister(kind: str) -> str:
    return {
        "project": "project action=list",
        "workspace": "workspace action=list",
        "session": "session action=list",
        "build": "image_rebuild",
    }[kind]


def check_name(name: str, what: str = "project") -> str:
    name = (name or "").strip()
    if not _NAME.match(name):
        raise InvalidArgument(
            f"invalid {what} name '{name[:80]}': use 1-63 characters a-z, 0-9, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def check_source(source: str, roots: Sequence[Path] | None = None) -> str:
    """A git source Jarvis may clone: an absolute local path, file://, https:// or ssh:// (never ext:: & co).

    A local path or file:// URL is a repository on this host: with `roots`, it must lie under one of
    them once symlinks are resolved (jarvis.common.roots), and its `.git` may not point elsewhere.
    """
    source = (source or "").strip()
    if not source:
        return ""
    if source.startswith("-") or any(ord(c) < 32 for c in source):
        raise InvalidArgument(
            f"invalid source_url '{source[:80]}': it may not start with '-' or contain control characters"
        )
    parsed = urlparse(source)
    if source.startswith("/"):
        local = source
    elif parsed.scheme == "file" and parsed.path.startswith("/") and parsed.netloc in ("", "localhost"):
        local = unquote(parsed.path)
    elif parsed.scheme in ("https", "ssh") and parsed.hostname:
        return source
    else:
        raise InvalidArgument(
            f"unsupported source_url '{source[:80]}': use an absolute local path, file://, "
            "https:// or ssh:// (other git transports such as ext:: are refused)"
        )
    if ".." in PurePosixPath(local).parts:
        raise InvalidArgument(f"invalid source_url '{source[:80]}': use a path without '..'")
    if roots is not None:
        _confine_repository(Path(local), roots)
    return source


def _confine_repository(path: Path, roots: Sequence[Path]) -> None:
    """The repository and, for a `.git` file (worktrees, submodules), the git dir it names, inside the roots."""
    confine(path, roots, "source_url")
    gitfile = path / ".git"
    if gitfile.is_file():
        try:
            pointer = gitfile.read_text(errors="replace").strip()
        except OSError:
            return  # unreadable: the clone fails and says so
        if pointer.startswith("gitdir:"):
            confine(path / pointer.removeprefix("gitdir:").strip(), roots, "source_url's git directory")


def check_image(image: str) -> str:
    image = (image or "").strip()
    if image and not _IMAGE.match(image):
        raise InvalidArgument(f"invalid image reference '{image[:80]}'")
    return image


def check_argv(argv: Sequence[str], what: str) -> list[str]:
    if not argv or not str(argv[0]).strip():
        raise InvalidArgument(f'{what} is empty: give the program and its arguments, e.g. ["ls", "-la"]')
    return check_args(argv, what)


def check_args(argv: Sequence[str], what: str) -> list[str]:
    """Arguments within the size limits and free of NUL bytes (which no argv can carry)."""
    args = [str(a) for a in argv]
    if len(args) > MAX_ARGS or sum(len(a.encode()) for a in args) > MAX_ARG_BYTES:
        raise InvalidArgument(f"{what} is too long (at most {MAX_ARGS} arguments, {MAX_ARG_BYTES} bytes)")
    if any("\x00" in a for a in args):
        raise InvalidArgument(f"{what} contains a NUL byte")
    return args


def check_protocol(protocol: str, default: str) -> str:
    protocol = (protocol or default).strip()
    if protocol not in PROTOCOLS:
        raise InvalidArgument(f"unknown agent_protocol '{protocol[:40]}'; use one of: {', '.join(PROTOCOLS)}")
    return protocol


def clamp(value: int, default: int, maximum: int, what: str) -> int:
    if value < 0:
        raise InvalidArgument(f"{what} must be positive")
    if value > maximum:
        raise InvalidArgument(f"{what} may be at most {maximum} (config_limits shows the limits)")
    return value or default


def check_env(env: Mapping[str, str]) -> dict[str, str]:
    """Environment variables a container can be given: POSIX-style names, no NUL bytes, bounded in size."""
    if len(env) > MAX_ARGS or sum(len(k.encode()) + len(v.encode()) for k, v in env.items()) > MAX_ARG_BYTES:
        raise InvalidArgument(f"env is too large (at most {MAX_ARGS} variables, {MAX_ARG_BYTES} bytes)")
    for name, value in env.items():
        if not _ENV_NAME.match(name):
            raise InvalidArgument(
                f"invalid environment variable name '{name[:80]}': use letters, digits and '_', "
                "not starting with a digit"
            )
        if "\x00" in value:
            raise InvalidArgument(f"the value of environment variable {name} contains a NUL byte")
    return dict(env)
