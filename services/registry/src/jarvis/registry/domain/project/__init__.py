"""Project analysis, git diff context, DevOps scaffolding and profile suggestions (no transport code)."""

from jarvis.registry.domain.project.analyze import analyze
from jarvis.registry.domain.project.changes import DEFAULT_MAX_BYTES, MAX_BYTES_LIMIT, diff
from jarvis.registry.domain.project.devops import SUPPORTED_STACKS, apply_devops, detect_stack
from jarvis.registry.domain.project.models import (
    CandidateServer,
    Dependency,
    DevopsResult,
    DiffResult,
    ProfileSuggestion,
    ProjectReport,
)
from jarvis.registry.domain.project.paths import resolve_project_dir
from jarvis.registry.domain.project.suggest import suggest_profiles

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_BYTES_LIMIT",
    "SUPPORTED_STACKS",
    "CandidateServer",
    "Dependency",
    "DevopsResult",
    "DiffResult",
    "ProfileSuggestion",
    "ProjectReport",
    "analyze",
    "apply_devops",
    "detect_stack",
    "diff",
    "resolve_project_dir",
    "suggest_profiles",
]
