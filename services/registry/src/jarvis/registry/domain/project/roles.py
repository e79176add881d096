"""Server roles (git, fetch, postgres …) and how candidates from the catalog are matched to them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from jarvis.registry.domain.project.models import CandidateServer

MAX_SERVERS_PER_ROLE = 2


@dataclass(frozen=True)
class Role:
    keywords: frozenset[str]
    purpose: str  # completes "→ <server> ...", e.g. "for HTTP APIs"


def _role(purpose: str, *keywords: str) -> Role:
    return Role(frozenset(keywords), purpose)


ROLES: dict[str, Role] = {
    "filesystem": _role("to read and edit the project's files", "filesystem", "fs", "files"),
    "git": _role("for history, blame and diffs", "git"),
    "fetch": _role("for HTTP APIs and web pages", "fetch", "http", "curl", "requests"),
    "time": _role("for dates and time zones", "time", "clock", "timezone", "datetime"),
    "browser": _role(
        "to drive a browser against the UI", "puppeteer", "playwright", "browser", "selenium", "chrome", "chromium"
    ),
    "postgres": _role("to inspect the PostgreSQL database", "postgres", "postgresql", "pg"),
    "sqlite": _role("to inspect SQLite databases", "sqlite", "sqlite3"),
    "mysql": _role("to inspect the MySQL database", "mysql", "mariadb"),
    "mongodb": _role("to inspect MongoDB collections", "mongodb", "mongo"),
    "redis": _role("to inspect Redis keys", "redis"),
    "github": _role("for pull requests, issues and Actions runs", "github"),
    "gitlab": _role("for merge requests, issues and pipelines", "gitlab"),
    "container": _role(
        "to build and inspect containers", "docker", "container", "containers", "podman", "kubernetes", "k8s"
    ),
}


def _tokens(*texts: str) -> set[str]:
    # "@modelcontextprotocol/server-postgres" -> {modelcontextprotocol, server, postgres}. camelCase is
    # left whole on purpose: splitting it would turn "GitHub" into a match for the git role.
    return {word for text in texts for word in re.split(r"[^a-z0-9]+", text.lower()) if word}


def _score(role: Role, candidate: CandidateServer) -> int:
    # A name says what a server is; a category less so; a description or tool name only hints.
    if role.keywords & _tokens(candidate.name):
        return 3
    if role.keywords & _tokens(candidate.category):
        return 2
    if role.keywords & _tokens(candidate.description, *candidate.tool_names):
        return 1
    return 0


def match(role_name: str, candidates: Sequence[CandidateServer]) -> list[CandidateServer]:
    """The best-matching candidates for a role (installed ones first), at most MAX_SERVERS_PER_ROLE."""
    role = ROLES[role_name]
    scored = [(score, candidate) for candidate in candidates if (score := _score(role, candidate))]
    if not scored:
        return []
    best = max(score for score, _ in scored)
    picked = sorted((c for score, c in scored if score == best), key=lambda c: (not c.installed, c.name))
    return picked[:MAX_SERVERS_PER_ROLE]
