"""Scaffold lint config, pre-commit hooks and a CI workflow for a project's stack."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.project.analyze import analyze
from jarvis.registry.domain.project.files import atomic_write, back_up
from jarvis.registry.domain.project.models import DevopsResult, ProjectReport
from jarvis.registry.domain.project.paths import is_inside, read_text_inside, resolve_project_dir

_PACKAGE = "jarvis.registry.domain.project"  # templates/ ships inside it as package data
SUPPORTED_STACKS = ("go", "node", "python", "rust")
_ALIASES = {
    "py": "python",
    "javascript": "node",
    "js": "node",
    "typescript": "node",
    "ts": "node",
    "nodejs": "node",
    "golang": "go",
}
_STACK_BY_MANIFEST = {
    "pyproject.toml": "python",
    "setup.py": "python",
    "Pipfile": "python",
    "requirements.txt": "python",
    "package.json": "node",
    "go.mod": "go",
    "Cargo.toml": "rust",
}
_STACK_BY_LANGUAGE = {"python": "python", "javascript": "node", "typescript": "node", "go": "go", "rust": "rust"}


@dataclass(frozen=True)
class Scaffold:
    target: str  # path written, relative to the project
    template: str  # file under templates/<stack>/
    tool: str
    superseded_by: tuple[str, ...] = ()  # configs (as analyze names them) that already do this job


_PRE_COMMIT = Scaffold(".pre-commit-config.yaml", "pre-commit-config.yaml", "pre-commit")
_CI = Scaffold(".github/workflows/ci.yml", "ci.yml", "CI")
_ESLINT_CONFIGS = (
    ".eslintrc",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".eslintrc.json",
    ".eslintrc.yml",
    ".eslintrc.yaml",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
)
SCAFFOLDS: dict[str, tuple[Scaffold, ...]] = {
    # ruff.toml would take precedence over [tool.ruff], and .ruff.toml over ruff.toml. The template
    # is not named ruff.toml so that ruff, linting this repository, never takes it for a live config.
    "python": (
        Scaffold("ruff.toml", "ruff-config.toml", "ruff", ("pyproject.toml [tool.ruff]", ".ruff.toml")),
        _PRE_COMMIT,
        _CI,
    ),
    "node": (Scaffold("eslint.config.js", "eslint.config.js", "eslint", _ESLINT_CONFIGS), _PRE_COMMIT, _CI),
    "go": (
        Scaffold(
            ".golangci.yml", "golangci.yml", "golangci-lint", (".golangci.yaml", ".golangci.toml", ".golangci.json")
        ),
        _PRE_COMMIT,
        _CI,
    ),
    "rust": (Scaffold("rustfmt.toml", "rustfmt.toml", "rustfmt", (".rustfmt.toml",)), _PRE_COMMIT, _CI),
}


def normalize_stack(stack: str) -> str:
    name = _ALIASES.get(stack.strip().lower(), stack.strip().lower())
    if name not in SUPPORTED_STACKS:
        raise InvalidArgument(f"unknown stack '{stack}'; supported stacks: {', '.join(SUPPORTED_STACKS)}")
    return name


def detect_stack(report: ProjectReport) -> str | None:
    """The stack of the root manifests (the one with most files wins), else of the top language."""
    rank: dict[str, int] = {}
    for position, language in enumerate(report.languages):
        if language in _STACK_BY_LANGUAGE:
            rank.setdefault(_STACK_BY_LANGUAGE[language], position)
    stacks = {stack for name, stack in _STACK_BY_MANIFEST.items() if (report.path / name).is_file()}
    candidates = stacks or set(rank)
    return min(candidates, key=lambda stack: (rank.get(stack, len(report.languages)), stack)) if candidates else None


def render(stack: str, scaffold: Scaffold, root: Path) -> bytes:
    text = (files(_PACKAGE) / "templates" / stack / scaffold.template).read_text(encoding="utf-8")
    if scaffold.target == "eslint.config.js" and not _is_es_module_package(root):
        # Node loads a .js file as CommonJS unless package.json says "type": "module".
        text = text.replace("export default [", "module.exports = [", 1)
    return text.encode("utf-8")


def _is_es_module_package(root: Path) -> bool:
    text = read_text_inside(root, "package.json")
    try:
        return text is not None and json.loads(text).get("type") == "module"
    except (ValueError, AttributeError):
        return False


def _parent_escapes(root: Path, target: Path) -> bool:
    existing = target.parent
    while not existing.exists():
        existing = existing.parent
    # A symlinked .github (say) must not carry the write outside the project.
    return not is_inside(root, existing)


def _skip_reason(root: Path, scaffold: Scaffold, data: bytes, report: ProjectReport, force: bool) -> str | None:
    target = root / scaffold.target
    found = next((config for config in scaffold.superseded_by if config in report.configs), None)
    if found:
        return f"{found} already configures {scaffold.tool}; left as is"
    if _parent_escapes(root, target):
        return "its folder is a symlink leading outside the project; not written"
    if target.is_symlink():
        return "is a symlink; replace it with a regular file to scaffold it"
    if target.exists() and not target.is_file():
        return "exists and is not a regular file"
    if target.exists() and target.read_bytes() == data:
        return "already up to date"
    if target.exists() and not force:
        return "exists (use force=true to overwrite)"
    return None


def apply_devops(
    path: Path,
    stack: str | None = None,
    force: bool = False,
    dry_run: bool = False,
    *,
    allowed_roots: Sequence[Path] | None = None,
) -> DevopsResult:
    """Write the stack's lint config, pre-commit hooks and CI workflow; dry_run writes nothing."""
    root = resolve_project_dir(path, allowed_roots)
    report = analyze(root, allowed_roots=allowed_roots)
    chosen = normalize_stack(stack) if stack else detect_stack(report)
    if chosen is None:
        raise InvalidArgument(
            f"could not detect the stack of {root} (no pyproject.toml, package.json, go.mod or Cargo.toml "
            f"and no Python, JavaScript, Go or Rust sources); pass type= "
            f"(jarvis_project action=devops) one of: {', '.join(SUPPORTED_STACKS)}"
        )
    written: list[str] = []
    skipped: list[str] = []
    backups: list[str] = []
    for scaffold in SCAFFOLDS[chosen]:
        data = render(chosen, scaffold, root)
        reason = _skip_reason(root, scaffold, data, report, force)
        if reason:
            skipped.append(f"{scaffold.target}: {reason}")
            continue
        written.append(scaffold.target)
        if dry_run:
            continue
        target = root / scaffold.target
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            backups.append(back_up(target).relative_to(root).as_posix())
        atomic_write(target, data)
    return DevopsResult(
        stack=chosen, written=tuple(written), skipped=tuple(skipped), backups=tuple(backups), dry_run=dry_run
    )
