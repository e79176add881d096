"""Project roots: the directories under which Jarvis reads, diffs or clones a project path a caller names.

One policy for every service that takes such a path (the registry's project analysis and diff,
the runtime's local and `file://` project sources): the path is resolved with every symlink and
`..` followed, and must then lie inside one of the roots, compared component by component (so
`/srv/app2` is not inside `/srv/app`). The setting is `JARVIS_PROJECT_ROOTS` (a JSON list of
absolute directories; each service also accepts its own prefixed name); unset, it is the home
directory of the user running Jarvis. `["/"]` turns the confinement off.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from jarvis.common.errors import PermissionDenied

SETTING = "JARVIS_PROJECT_ROOTS"


def default_roots() -> list[Path]:
    return [Path.home()]


def parse_roots(value: object) -> list[Path]:
    """The setting's value (a JSON list, or a list already parsed) as absolute paths; ValueError otherwise."""
    items = json.loads(value) if isinstance(value, str) else value
    if isinstance(items, (str, Path)) or not isinstance(items, Sequence):
        raise ValueError(f'{SETTING} must be a JSON list of absolute directories, e.g. ["/home/me/src"]')
    roots = [Path(str(item)).expanduser() for item in items]
    relative = [str(root) for root in roots if not root.is_absolute()]
    if relative:
        raise ValueError(f"{SETTING} entries must be absolute directories; got {', '.join(relative)}")
    return roots


def containing_root(path: Path, roots: Sequence[Path]) -> Path | None:
    """The (resolved) root that `path` lies in after resolving its symlinks, or None."""
    resolved = path.resolve(strict=False)
    for root in roots:
        real_root = root.resolve(strict=False)
        if resolved.is_relative_to(real_root):
            return real_root
    return None


def confine(path: Path, roots: Sequence[Path], what: str) -> Path:
    """`path` resolved, or PermissionDenied naming the roots when it lies outside all of them.

    Checked before existence, so a caller cannot probe which paths exist outside the roots.
    """
    if containing_root(path, roots) is None:
        names = ", ".join(str(root) for root in roots) or "(none configured)"
        raise PermissionDenied(
            f"{what} {path} is outside the allowed project roots; use a directory under: "
            f"{names} (the {SETTING} setting)"
        )
    return path.resolve(strict=False)
