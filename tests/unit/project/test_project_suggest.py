"""suggest_profiles(): rules from what a project is, candidates matched by name/category/description."""

from __future__ import annotations

from pathlib import Path

from jarvis.registry.domain.project import (
    CandidateServer,
    ProfileSuggestion,
    ProjectReport,
    analyze,
    suggest_profiles,
)
from tests.unit.project.project_support import Git, write

CATALOG = [
    CandidateServer("filesystem", "Secure file operations", "files", ["read_file", "write_file"], True),
    CandidateServer("git", "Read, search and manipulate Git repositories", "vcs", ["git_log"], True),
    CandidateServer("fetch", "Fetch web content", "web", ["fetch"], False),
    CandidateServer("time", "Time and timezone conversion", "utility", ["get_current_time"], True),
    CandidateServer("github", "GitHub API: issues, pull requests, git repositories", "vcs", [], False),
    CandidateServer("postgres", "Read-only database access", "database", ["query"], False),
    CandidateServer("sqlite", "Database interaction and business intelligence", "database", [], False),
    CandidateServer("puppeteer", "Browser automation", "browser", ["navigate"], False),
    CandidateServer("docker-mcp", "Manage containers and images", "devops", [], False),
    CandidateServer("memory", "Knowledge graph memory kept over time", "memory", [], True),
]


def _by_name(suggestions: list[ProfileSuggestion]) -> dict[str, ProfileSuggestion]:
    return {s.name: s for s in suggestions}


def test_python_web_project_in_git(python_project: Path, git: Git) -> None:
    git(python_project, "init", "-q", "-b", "main")
    report = analyze(python_project)

    suggestions = _by_name(suggest_profiles(report, CATALOG, ["claude-code"]))

    assert list(suggestions) == ["core", "shop-api-dev", "data"]
    core = suggestions["core"]
    assert core.servers == ("filesystem", "git", "fetch", "time")
    dev = suggestions["shop-api-dev"]
    assert dev.servers == ("filesystem", "git", "github", "docker-mcp", "fetch", "postgres", "sqlite")
    assert "pyproject.toml depends on fastapi → fetch for HTTP APIs and web pages" in dev.reasons
    assert "shop-api is a git repository (branch main) → git for history, blame and diffs" in dev.reasons
    assert ".github/workflows/ci.yml found → github for pull requests, issues and Actions runs" in dev.reasons
    assert "Dockerfile found → docker-mcp to build and inspect containers" in dev.reasons
    assert "pyproject.toml depends on sqlalchemy, psycopg → postgres to inspect the PostgreSQL database" in dev.reasons
    assert any(r.startswith("not installed yet: github, docker-mcp, fetch, postgres") for r in dev.reasons)
    assert suggestions["data"].servers == ("postgres", "sqlite")
    # The memory server's description mentions "time", but a server named "time" matches first.
    assert "memory" not in {s for suggestion in suggestions.values() for s in suggestion.servers}
    assert "clients detected (claude-code)" in core.reasons[-1]


def test_frontend_project_gets_a_web_profile(node_project: Path) -> None:
    suggestions = _by_name(suggest_profiles(analyze(node_project), CATALOG, []))

    web = suggestions["web"]
    assert web.servers == ("puppeteer", "fetch")
    assert "package.json depends on react, next, vite → puppeteer to drive a browser against the UI" in web.reasons
    assert "package.json depends on next, express → fetch for HTTP APIs and web pages" in web.reasons
    assert suggestions["data"].servers == ("postgres",)  # from the `pg` dependency
    assert "web-ui-dev" in suggestions


def test_servers_come_only_from_candidates(mixed_project: Path) -> None:
    only = [CandidateServer("mcp-server-git", "git tools"), CandidateServer("redis", "Redis keys")]

    suggestions = suggest_profiles(analyze(mixed_project), only, [])

    # Not a git repository: git only in core; "data" would repeat the project profile, so it is left out.
    assert [(s.name, s.servers) for s in suggestions] == [
        ("core", ("mcp-server-git",)),
        ("mixed-project-dev", ("redis",)),
    ]
    assert "docker-compose.yml depends on redis → redis to inspect Redis keys" in suggestions[1].reasons


def test_no_candidates_or_no_match_gives_no_suggestions(tmp_path: Path) -> None:
    report = analyze(write(tmp_path, {"a.py": ""}))
    assert suggest_profiles(report, [], ["cursor"]) == []
    assert suggest_profiles(report, [CandidateServer("weather", "Forecasts")], []) == []


def test_project_profile_adding_nothing_to_core_is_dropped(tmp_path: Path) -> None:
    report = analyze(write(tmp_path / "plain", {"a.py": ""}))
    suggestions = suggest_profiles(report, CATALOG, [])
    assert [s.name for s in suggestions] == ["core"]


def test_matching_prefers_name_then_category_then_description_and_installed_first(tmp_path: Path) -> None:
    report = ProjectReport(path=tmp_path / "x", configs=(".github/workflows/a.yml",))
    candidates = [
        CandidateServer("hub-tools", "Works with GitHub", "misc"),
        CandidateServer("scm", "Source hosting", "github"),
        CandidateServer("github-b", "", "", [], False),
        CandidateServer("github-a", "", "", [], False),
        CandidateServer("github-z", "", "", [], True),
    ]

    dev = suggest_profiles(report, candidates, [])[0]

    # Name matches win over category/description; installed first, then by name; two per role.
    assert dev.servers == ("github-z", "github-a")


def test_scoped_names_are_split_but_github_is_not_git(tmp_path: Path) -> None:
    report = ProjectReport(path=tmp_path / "x")
    candidates = [
        CandidateServer("@modelcontextprotocol/server-filesystem"),
        CandidateServer("GitHubServer"),
        CandidateServer("mcp_time"),
    ]
    core = suggest_profiles(report, candidates, [])[0]
    assert core.servers == ("@modelcontextprotocol/server-filesystem", "mcp_time")
