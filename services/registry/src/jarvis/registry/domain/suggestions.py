"""Profile suggestions for a project: what the project is, matched against servers Jarvis knows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jarvis.registry.domain.project import CandidateServer, ProfileSuggestion, analyze, suggest_profiles
from jarvis.registry.domain.records import CatalogEntry, Server


@dataclass(frozen=True)
class Suggestions:
    suggestions: list[ProfileSuggestion]
    existing: frozenset[str]
    detected: list[str]
    clients_detected: list[str]


def suggest_for_project(
    project_dir: Path,
    installed: list[Server],
    catalog: list[CatalogEntry],
    profiles: set[str],
    clients_detected: list[str],
    *,
    allowed_roots: Sequence[Path] | None = None,
) -> Suggestions:
    """Installed servers come first; catalog entries not installed yet are offered too."""
    report = analyze(project_dir, allowed_roots=allowed_roots)
    candidates = [
        CandidateServer(s.name, s.description, "", [t.name for t in s.tools], installed=True) for s in installed
    ]
    installed_names = {s.name for s in installed}
    candidates += [
        CandidateServer(e.name, e.description, e.category, [t.name for t in e.tools], installed=False)
        for e in catalog
        if e.name not in installed_names
    ]
    detected = list(
        dict.fromkeys(
            [
                *report.languages,
                *report.frameworks,
                *report.package_managers,
                *report.test_frameworks,
                *(["git"] if report.is_git_repo else []),
            ]
        )
    )
    return Suggestions(
        suggest_profiles(report, candidates, clients_detected), frozenset(profiles), detected, clients_detected
    )
