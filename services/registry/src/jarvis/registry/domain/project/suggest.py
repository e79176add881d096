"""Suggest MCP server profiles from what a project is (git, web frameworks, databases, CI, docker)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from jarvis.registry.domain.project.detect import framework_of
from jarvis.registry.domain.project.models import CandidateServer, ProfileSuggestion, ProjectReport
from jarvis.registry.domain.project.roles import ROLES, match

API_FRAMEWORKS = frozenset(
    {
        "django",
        "flask",
        "fastapi",
        "starlette",
        "aiohttp",
        "tornado",
        "sanic",
        "litestar",
        "pyramid",
        "express",
        "fastify",
        "koa",
        "hono",
        "nestjs",
        "next",
        "nuxt",
        "gin",
        "echo",
        "fiber",
        "chi",
        "gorilla-mux",
        "actix-web",
        "axum",
        "rocket",
        "warp",
        "rails",
        "sinatra",
        "laravel",
        "symfony",
        "spring-boot",
    }
)
UI_FRAMEWORKS = frozenset(
    {
        "react",
        "vue",
        "next",
        "nuxt",
        "svelte",
        "sveltekit",
        "angular",
        "solid",
        "astro",
        "remix",
        "gatsby",
        "vite",
        "streamlit",
        "gradio",
    }
)
_SQL = ("postgres", "sqlite")  # an ORM alone does not say which database: offer both
DATABASE_ROLES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            "psycopg",
            "psycopg2",
            "psycopg2-binary",
            "asyncpg",
            "pg8000",
            "pg",
            "postgres",
            "postgresql",
            "@neondatabase/serverless",
            "github.com/lib/pq",
            "github.com/jackc/pgx",
            "tokio-postgres",
        ),
        ("postgres",),
    ),
    **dict.fromkeys(
        (
            "aiosqlite",
            "sqlite3",
            "better-sqlite3",
            "rusqlite",
            "sqlite",
            "github.com/mattn/go-sqlite3",
            "modernc.org/sqlite",
        ),
        ("sqlite",),
    ),
    **dict.fromkeys(
        (
            "pymysql",
            "mysqlclient",
            "mysql-connector-python",
            "aiomysql",
            "mysql",
            "mysql2",
            "mariadb",
            "github.com/go-sql-driver/mysql",
        ),
        ("mysql",),
    ),
    **dict.fromkeys(("pymongo", "motor", "mongodb", "mongoose", "mongo", "go.mongodb.org/mongo-driver"), ("mongodb",)),
    **dict.fromkeys(("redis", "ioredis", "github.com/redis/go-redis", "github.com/go-redis/redis"), ("redis",)),
    **dict.fromkeys(
        (
            "sqlalchemy",
            "sqlmodel",
            "peewee",
            "tortoise-orm",
            "alembic",
            "prisma",
            "@prisma/client",
            "typeorm",
            "sequelize",
            "knex",
            "drizzle-orm",
            "gorm.io/gorm",
            "diesel",
            "sqlx",
        ),
        _SQL,
    ),
}
CORE_ROLES = ("filesystem", "git", "fetch", "time")
_CONTAINER_CONFIGS = ("Dockerfile", "docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml")


@dataclass(frozen=True)
class Need:
    """A role the project calls for, and what calls for it: a fact, or a manifest and a dependency."""

    role: str
    source: str  # "every project", "Dockerfile found", or a manifest such as "pyproject.toml"
    dependency: str = ""


def _because(needs: Sequence[Need]) -> str:
    """'pyproject.toml depends on sqlalchemy, psycopg; Dockerfile found' from the needs of one role."""
    by_source: dict[str, list[str]] = {}
    for need in needs:
        deps = by_source.setdefault(need.source, [])
        if need.dependency and need.dependency not in deps:
            deps.append(need.dependency)
    return "; ".join(f"{source} depends on {', '.join(deps)}" if deps else source for source, deps in by_source.items())


def _repo_needs(report: ProjectReport) -> list[Need]:
    needs = [Need("filesystem", "every project")]
    if report.is_git_repo:
        branch = f" (branch {report.git_branch})" if report.git_branch else ""
        needs.append(Need("git", f"{report.path.name} is a git repository{branch}"))
    workflows = [c for c in report.configs if c.startswith(".github/workflows/")]
    if workflows:
        needs.append(Need("github", f"{workflows[0]} found"))
    if ".gitlab-ci.yml" in report.configs:
        needs.append(Need("gitlab", ".gitlab-ci.yml found"))
    containers = [c for c in report.configs if c.startswith(_CONTAINER_CONFIGS)]
    if containers:
        needs.append(Need("container", f"{containers[0]} found"))
    return needs


def _web_needs(report: ProjectReport) -> list[Need]:
    needs: list[Need] = []
    for dep in report.dependencies:
        framework = framework_of(dep.name)
        if framework in API_FRAMEWORKS:
            needs.append(Need("fetch", dep.source, dep.name))
        if framework in UI_FRAMEWORKS:
            needs.append(Need("browser", dep.source, dep.name))
    return needs


def _data_needs(report: ProjectReport) -> list[Need]:
    return [
        Need(role, dep.source, dep.name) for dep in report.dependencies for role in DATABASE_ROLES.get(dep.name, ())
    ]


def _build(name: str, needs: Sequence[Need], candidates: Sequence[CandidateServer]) -> ProfileSuggestion | None:
    by_role: dict[str, list[Need]] = {}  # in order of discovery
    for need in needs:
        by_role.setdefault(need.role, []).append(need)
    servers: dict[str, CandidateServer] = {}
    reasons: list[str] = []
    for role, role_needs in by_role.items():
        matched = match(role, candidates)
        if matched:
            servers.update((c.name, c) for c in matched)
            names = ", ".join(c.name for c in matched)
            reasons.append(f"{_because(role_needs)} → {names} {ROLES[role].purpose}")
    missing = [n for n, c in servers.items() if not c.installed]
    if missing:
        reasons.append(f"not installed yet: {', '.join(missing)} (install with jarvis_server action=install)")
    return ProfileSuggestion(name, tuple(servers), tuple(reasons)) if servers else None


def profile_name(report: ProjectReport) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", report.path.name.lower()).strip("-") or "project"
    return f"{slug}-dev"


def suggest_profiles(
    report: ProjectReport, candidates: Sequence[CandidateServer], clients_detected: Sequence[str] = ()
) -> list[ProfileSuggestion]:
    """Profiles worth creating for this project, each with servers only from `candidates`."""
    web, data = _web_needs(report), _data_needs(report)
    core = _build("core", [Need(role, "every project") for role in CORE_ROLES], candidates)
    suggestions = [core] if core else []
    core_servers = set(core.servers) if core else set()
    for name, needs in ((profile_name(report), [*_repo_needs(report), *web, *data]), ("web", web), ("data", data)):
        built = _build(name, needs, candidates)
        # Core is always offered: a profile adding nothing to it, or repeating another, is noise.
        if (
            built
            and not set(built.servers) <= core_servers
            and all(set(built.servers) != set(s.servers) for s in suggestions)
        ):
            suggestions.append(built)
    if suggestions and clients_detected:
        first = suggestions[0]
        hint = (
            f"clients detected ({', '.join(clients_detected)}) → attach a profile to them with "
            "jarvis_client action=edit"
        )
        suggestions[0] = ProfileSuggestion(first.name, first.servers, (*first.reasons, hint))
    return suggestions
