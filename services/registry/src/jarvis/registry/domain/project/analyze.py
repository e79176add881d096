"""Analyse a project directory: languages, frameworks, package managers, configs, tests, git."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jarvis.common.errors import JarvisError
from jarvis.common.roots import containing_root
from jarvis.registry.domain.project import detect
from jarvis.registry.domain.project.configs import find_configs
from jarvis.registry.domain.project.git import current_branch, is_work_tree
from jarvis.registry.domain.project.manifests import is_manifest, read_dependencies
from jarvis.registry.domain.project.models import ProjectReport
from jarvis.registry.domain.project.paths import resolve_project_dir
from jarvis.registry.domain.project.walk import MAX_FILES, ordered_languages, walk


def analyze(path: Path, *, allowed_roots: Sequence[Path] | None = None, max_files: int = MAX_FILES) -> ProjectReport:
    """Report what the project at `path` is made of; reads files, never runs project code."""
    root = resolve_project_dir(path, allowed_roots)
    walked = walk(root, detect.is_interesting, max_files=max_files)
    manifests = [rel for rel in walked.found if is_manifest(rel.rsplit("/", 1)[-1])]
    dependencies, notes = read_dependencies(root, manifests)
    if walked.truncated:
        notes.insert(0, f"stopped after {max_files:,} files; language counts cover only those files")
    is_repo, branch = False, ""
    try:
        ceiling = containing_root(root, allowed_roots) if allowed_roots is not None else None
        is_repo = is_work_tree(root, ceiling)
        branch = current_branch(root, ceiling) if is_repo else ""
    except JarvisError as exc:  # git missing or refusing the repo: the rest of the report still stands
        notes.append(f"git state unknown: {exc.message}")
    return ProjectReport(
        path=root,
        languages=tuple(ordered_languages(walked.counts)),
        file_counts=dict(walked.counts),
        frameworks=tuple(detect.frameworks(dependencies, walked.found)),
        package_managers=tuple(detect.package_managers(walked.found)),
        configs=tuple(find_configs(root)),
        test_frameworks=tuple(detect.test_frameworks(dependencies, walked.found)),
        dependencies=tuple(dependencies),
        is_git_repo=is_repo,
        git_branch=branch,
        files_scanned=walked.files_scanned,
        walk_truncated=walked.truncated,
        notes=tuple(notes),
    )
