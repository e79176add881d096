"""Every action of every `jarvis_*` tool, through a real MCP client over HTTP, success and errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json

pytestmark = pytest.mark.anyio


async def test_action_errors_use_the_spec_texts(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        missing = await client.call_tool("jarvis_server", {})
        unknown = await client.call_tool("jarvis_server", {"action": "nope"})
        profile_unknown = await client.call_tool("jarvis_profile", {"action": "invalid"})
    assert error_text(missing) == "action parameter is required"
    assert error_text(unknown) == (
        "unknown action 'nope' for jarvis_server tool; valid actions: "
        "list, info, install, uninstall, search, edit, create, usage, connect, disconnect"
    )
    assert error_text(profile_unknown).startswith("unknown action 'invalid' for jarvis_profile tool; valid actions:")


async def test_arguments_are_validated_and_errors_name_the_field(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        wrong_type = await client.call_tool("jarvis_server", {"action": "search", "query": 42})
        unknown_param = await client.call_tool("jarvis_server", {"action": "list", "colour": "red"})
        missing_required = await client.call_tool("jarvis_server", {"action": "info"})
        bad_enum = await client.call_tool("jarvis_server", {"action": "create", "name": "x", "type": "ftp"})
    assert "'query'" in error_text(wrong_type)
    assert "string" in error_text(wrong_type)
    assert "colour" in error_text(unknown_param)
    assert "accepted parameters" in error_text(unknown_param)
    assert "requires 'name'" in error_text(missing_required)
    assert "'type'" in error_text(bad_enum)


async def test_old_names_point_to_the_new_tool_and_action(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        old = await client.call_tool("jarvis_server_list", {})
        older = await client.call_tool("server_install", {"name": "time"})
        legacy = await client.call_tool("go_ent_jarvis_profile_list", {})
    assert error_text(old) == (
        "tool 'jarvis_server_list' not found: it was renamed; call 'jarvis_server' with action=\"list\" "
        "(on the jarvis surface)"
    )
    assert "call 'jarvis_server' with action=\"install\"" in error_text(older)
    assert "call 'jarvis_profile' with action=\"list\"" in error_text(legacy)


async def test_check_status_reports_doctor_services_and_daemons(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        report = result_json(await client.call_tool("jarvis_check_status", {}))
    checks = {c["name"]: c for c in report["doctor"]}
    assert checks, report
    assert all(c["ok"] for c in checks.values()), checks
    assert any("database" in name for name in checks)
    assert report["services"]["registry"]["ok"] is True
    assert report["services"]["registry"]["detail"] == "SERVING"
    assert set(report["daemons"]) == {"docker", "redis", "celery"}
    assert isinstance(report["daemons"]["docker"]["ok"], bool)
    assert report["aggregator"]["mode"] == "embedded"
    assert {"/mcp", "/mcp/jarvis"} <= set(report["aggregator"]["surfaces"])
    assert report["healthy"] is True


async def test_server_lifecycle_from_catalog_and_custom(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        found = result_json(await client.call_tool("jarvis_server", {"action": "search", "query": "current time zone"}))
        assert found["results"], found
        assert found["results"][0]["name"] == "time", found["results"][:3]
        # Bootstrap installed `time` (a credential-free default); installing it again is refused.
        assert found["results"][0]["installed"] is True
        again = await client.call_tool("jarvis_server", {"action": "install", "name": "time"})
        assert "already exists" in error_text(again)

        installed = result_json(await client.call_tool("jarvis_server", {"action": "install", "name": "everything"}))
        assert installed["installed"]["name"] == "everything"
        assert installed["installed"]["catalog_name"] == "everything"
        assert installed["installed"]["tools"]
        # Its status is the one `info` and `list` give (issue 46: it said "not-hosted", then info said "stopped").
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "everything"}))
        assert installed["installed"]["status"] == info["status"] == "stopped"
        needs_env = await client.call_tool("jarvis_server", {"action": "install", "name": "github"})
        assert "GITHUB" in error_text(needs_env)

        created = result_json(
            await client.call_tool(
                "jarvis_server",
                {
                    "action": "create",
                    "name": "Local-Tools",
                    "type": "stdio",
                    "command": "python3",
                    "args": ["-m", "local_tools"],
                    "env": {"LEVEL": "2"},
                    "description": "team helpers",
                },
            )
        )
        assert created["created"]["name"] == "local-tools"
        remote = result_json(
            await client.call_tool(
                "jarvis_server",
                {"action": "create", "name": "remote", "type": "streamable-http", "url": "https://mcp.example.com/mcp"},
            )
        )
        assert remote["created"]["launch"]["url"] == "https://mcp.example.com/mcp"
        metadata = await client.call_tool(
            "jarvis_server",
            {"action": "create", "name": "meta", "type": "streamable-http", "url": "http://169.254.169.254/latest"},
        )
        assert "169.254.169.254" in error_text(metadata)
        no_command = await client.call_tool("jarvis_server", {"action": "create", "name": "empty", "type": "stdio"})
        assert "command" in error_text(no_command)

        listing = result_json(await client.call_tool("jarvis_server", {"action": "list"}))
        by_name = {s["name"]: s for s in listing["servers"]}
        assert {"time", "everything", "local-tools", "remote"} <= set(by_name)
        assert by_name["local-tools"]["status"]
        assert by_name["local-tools"]["transport"] == "stdio"

        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "local-tools"}))
        assert info["launch"]["command"] == "python3"
        assert info["launch"]["env"] == {"LEVEL": "<set>"}  # values never shown

        edited = result_json(
            await client.call_tool(
                "jarvis_server",
                {
                    "action": "edit",
                    "name": "local-tools",
                    "args": ["-m", "local_tools", "--verbose"],
                    "env": {"MODE": "x", "LEVEL": None},
                },
            )
        )
        assert edited["edited"]["launch"]["args"] == ["-m", "local_tools", "--verbose"]
        assert edited["edited"]["launch"]["env"] == {"MODE": "<set>"}
        nothing = await client.call_tool("jarvis_server", {"action": "edit", "name": "local-tools"})
        assert "needs something to change" in error_text(nothing)

        result_json(
            await client.call_tool(
                "jarvis_profile", {"action": "create", "name": "helpers", "servers": ["local-tools", "time"]}
            )
        )
        gone = result_json(await client.call_tool("jarvis_server", {"action": "uninstall", "name": "local-tools"}))
        assert gone["uninstalled"]["removed_from_profiles"] == ["helpers"]
        profile = result_json(await client.call_tool("jarvis_profile", {"action": "list"}))
        helpers = next(p for p in profile["profiles"] if p["name"] == "helpers")
        assert helpers["servers"] == ["time"]
        missing = await client.call_tool("jarvis_server", {"action": "info", "name": "local-tools"})
        assert "local-tools" in error_text(missing)


async def test_usage_counts_calls_per_tool_and_action(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        for _ in range(3):
            result_json(await client.call_tool("jarvis_config", {"action": "list"}))
        error_text(await client.call_tool("jarvis_config", {"action": "get", "key": "no.such.key"}))
        usage = result_json(await client.call_tool("jarvis_server", {"action": "usage", "name": "jarvis_config"}))
    stats = {s["action"]: s for s in usage["usage"]}
    assert isinstance(stats["list"]["calls"], int)  # counts are numbers, not proto3-JSON strings
    assert stats["list"]["calls"] >= 3
    assert stats["list"]["errors"] == 0
    assert stats["get"]["errors"] >= 1
    assert float(stats["list"]["avg_latency_ms"]) > 0


async def test_profiles_create_edit_suggest_restart_delete(jarvis: RunningJarvis, project_dir: Path) -> None:
    async with mcp_client(jarvis.url()) as client:
        result_json(await client.call_tool("jarvis_server", {"action": "install", "name": "fetch"}))
        created = result_json(
            await client.call_tool(
                "jarvis_profile", {"action": "create", "name": "web", "servers": ["fetch"], "description": "browsing"}
            )
        )
        assert created["created"]["servers"] == ["fetch"]
        unknown = await client.call_tool("jarvis_profile", {"action": "create", "name": "bad", "servers": ["nope"]})
        assert "nope" in error_text(unknown)

        result_json(await client.call_tool("jarvis_server", {"action": "install", "name": "git"}))
        edited = result_json(
            await client.call_tool(
                "jarvis_profile",
                {"action": "edit", "name": "web", "add": ["git"], "remove": ["fetch"], "new_name": "webdev"},
            )
        )
        assert edited["edited"]["name"] == "webdev"
        assert edited["edited"]["servers"] == ["git"]

        suggested = result_json(
            await client.call_tool("jarvis_profile", {"action": "suggest", "path": str(project_dir)})
        )
        assert suggested["suggestions"], suggested
        servers = {s for sug in suggested["suggestions"] for s in sug["servers"]}
        assert "git" in servers
        assert all(sug["reasons"] for sug in suggested["suggestions"])

        restarted = result_json(await client.call_tool("jarvis_profile", {"action": "restart", "name": "webdev"}))
        assert restarted["restarted"][0]["servers"][0]["name"] == "git"
        # `git` runs through uvx, which may not be installed (or reach the network) here: either outcome is
        # reported plainly; tests/e2e/test_downstream_lifecycle.py covers real restarts.
        outcome = restarted["restarted"][0]["servers"][0]
        assert outcome["outcome"] == "running" or outcome["error"], outcome

        result_json(await client.call_tool("jarvis_profile", {"action": "delete", "name": "webdev"}))
        listing = result_json(await client.call_tool("jarvis_profile", {"action": "list"}))
        assert "webdev" not in {p["name"] for p in listing["profiles"]}
        again = await client.call_tool("jarvis_profile", {"action": "delete", "name": "webdev"})
        assert "webdev" in error_text(again)


async def test_client_config_edit_keeps_unrelated_entries(jarvis: RunningJarvis, tmp_path: Path) -> None:
    cursor_file = tmp_path / "cursor-mcp.json"
    cursor_file.write_text(
        json.dumps({"mcpServers": {"mine": {"command": "my-server", "args": ["--x"]}}, "other": {"keep": True}})
    )
    async with mcp_client(jarvis.url()) as client:
        clients = result_json(await client.call_tool("jarvis_client", {"action": "list"}))
        assert {"claude-desktop", "claude-code", "cursor", "vscode", "windsurf"} <= {
            c["name"] for c in clients["clients"]
        }
        configured = result_json(
            await client.call_tool("jarvis_client", {"action": "config", "name": "cursor", "path": str(cursor_file)})
        )
        assert configured["path"] == str(cursor_file)
        assert configured["custom"] is True
        result_json(await client.call_tool("jarvis_server", {"action": "install", "name": "memory"}))
        edit = result_json(
            await client.call_tool("jarvis_client", {"action": "edit", "name": "cursor", "add": ["memory"]})
        )
        assert edit["backup_path"]
        assert Path(edit["backup_path"]).exists()
        written = json.loads(cursor_file.read_text())
        assert written["other"] == {"keep": True}
        assert written["mcpServers"]["mine"] == {"command": "my-server", "args": ["--x"]}
        assert "memory" in written["mcpServers"]

        imported = result_json(await client.call_tool("jarvis_client", {"action": "import", "name": "cursor"}))
        assert "mine" in imported["imported"]
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "mine"}))
        assert info["launch"]["command"] == "my-server"

        removed = result_json(
            await client.call_tool("jarvis_client", {"action": "edit", "name": "cursor", "remove": ["memory"]})
        )
        assert removed["removed"] == ["memory"]
        assert "memory" not in json.loads(cursor_file.read_text())["mcpServers"]
        unknown = await client.call_tool("jarvis_client", {"action": "config", "name": "notepad"})
        assert "cursor" in error_text(unknown)


async def test_config_get_set_list(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        listing = result_json(await client.call_tool("jarvis_config", {"action": "list"}))
        keys = {e["key"] for e in listing["config"]}
        assert "aggregator_url" in keys
        assert listing["version"] == 2
        result_json(
            await client.call_tool("jarvis_config", {"action": "set", "key": "discovery.default_limit", "value": 7})
        )
        got = result_json(await client.call_tool("jarvis_config", {"action": "get", "key": "discovery.default_limit"}))
        assert got["value"] == 7
        assert got["default"] is False
        bad = await client.call_tool(
            "jarvis_config", {"action": "set", "key": "discovery.default_limit", "value": "many"}
        )
        assert "discovery.default_limit" in error_text(bad)
        unknown = await client.call_tool("jarvis_config", {"action": "get", "key": "colour"})
        assert "aggregator_url" in error_text(unknown)
        migrated = result_json(await client.call_tool("jarvis_config", {"action": "migrate"}))
        assert migrated["to_version"] == 2
        assert not migrated["backup_path"]


async def test_project_analyze_diff_devops(jarvis: RunningJarvis, project_dir: Path) -> None:
    (project_dir / "src" / "app" / "__init__.py").write_text("VALUE = 2\n")
    (project_dir / "NEW.md").write_text("new\n")
    subprocess.run(["git", "add", "NEW.md"], cwd=project_dir, check=True)
    async with mcp_client(jarvis.url()) as client:
        report = result_json(await client.call_tool("jarvis_project", {"action": "analyze", "path": str(project_dir)}))
        assert report["languages"][0] == "python"
        assert "fastapi" in report["frameworks"]
        assert report["is_git_repo"] is True
        unstaged = result_json(await client.call_tool("jarvis_project", {"action": "diff", "path": str(project_dir)}))
        assert "VALUE = 2" in unstaged["diff"]
        assert "NEW.md" not in unstaged["diff"]
        staged = result_json(
            await client.call_tool("jarvis_project", {"action": "diff", "path": str(project_dir), "staged": True})
        )
        assert "NEW.md" in staged["diff"]
        assert "VALUE = 2" not in staged["diff"]
        devops = result_json(await client.call_tool("jarvis_project", {"action": "devops", "path": str(project_dir)}))
        assert devops["stack"] == "python"
        assert ".pre-commit-config.yaml" in devops["written"]
        assert ".github/workflows/ci.yml" in devops["written"]
        assert (project_dir / ".github" / "workflows" / "ci.yml").is_file()
        hooks = project_dir / ".pre-commit-config.yaml"
        hooks.write_text("repos: []  # the team's own\n")
        refused = result_json(await client.call_tool("jarvis_project", {"action": "devops", "path": str(project_dir)}))
        assert ".pre-commit-config.yaml: exists (use force=true to overwrite)" in refused["skipped"]
        assert not refused["written"]
        assert hooks.read_text() == "repos: []  # the team's own\n"
        forced = result_json(
            await client.call_tool("jarvis_project", {"action": "devops", "path": str(project_dir), "force": True})
        )
        assert ".pre-commit-config.yaml" in forced["written"]
        assert (project_dir / ".pre-commit-config.yaml.bak").read_text() == "repos: []  # the team's own\n"
        not_dir = await client.call_tool("jarvis_project", {"action": "analyze", "path": str(project_dir / "nope")})
        assert "nope" in error_text(not_dir)


async def test_share_issues_and_revokes_a_share_token(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        started = result_json(
            await client.call_tool("jarvis_share", {"action": "start", "name": "sequential-thinking"})
        )["started"]
        listing = result_json(await client.call_tool("jarvis_share", {"action": "list"}))
        unknown = await client.call_tool("jarvis_share", {"action": "start", "name": "ghost"})
        stopped = result_json(await client.call_tool("jarvis_share", {"action": "stop", "name": "sequential-thinking"}))
    assert started["url"] == jarvis.url("/share/sequential-thinking/mcp")
    assert started["token"].startswith("jv_")
    assert [s["server"] for s in listing["shares"]] == ["sequential-thinking"]
    assert "ghost" in error_text(unknown)
    assert stopped["revoked_token"] == started["token_id"]


async def test_system_bootstrap_and_restart_infra(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        boot = result_json(await client.call_tool("jarvis_system", {"action": "bootstrap"}))
        assert boot["steps"]
        assert boot["catalog_entries"] > 0
        assert set(boot["infrastructure"]) == {"docker", "redis", "celery"}
        infra = result_json(await client.call_tool("jarvis_system", {"action": "restart_infra"}))
        # Every service embedded Jarvis runs is restarted on its own address and serves again.
        assert [r["component"] for r in infra["restarted"]] == ["registry", "debug", "runtime", "scheduler"]
        assert all(r["healthy"] is True and r["health"] == "SERVING" for r in infra["restarted"]), infra
        assert infra["healthy"] is True
        assert set(infra["not_managed"]) == {"docker", "redis", "celery"}
        # Each answers again after its restart, with its data intact.
        listing = result_json(await client.call_tool("jarvis_server", {"action": "list"}))
        assert listing["count"] >= 1
        status = result_json(await client.call_tool("jarvis_check_status", {}))
        assert all(status["services"][name]["ok"] is True for name in ("registry", "debug", "runtime", "scheduler"))
    async with mcp_client(jarvis.url("/mcp/orchestrator")) as orchestrator:
        assert "schedules" in result_json(await orchestrator.call_tool("schedule", {"action": "list"}))
    async with mcp_client(jarvis.url("/mcp/debug")) as debug:
        assert not (await debug.call_tool("debug", {})).is_error


async def _core_servers(client: Any) -> set[str]:
    profiles = result_json(await client.call_tool("jarvis_profile", {"action": "list"}))["profiles"]
    return set(next(p for p in profiles if p["name"] == "core")["servers"])


async def test_bootstrap_keeps_removals_and_restores_defaults_on_request(jarvis: RunningJarvis) -> None:
    async with mcp_client(jarvis.url()) as client:
        assert {"time", "sequential-thinking"} <= await _core_servers(client)
        result_json(await client.call_tool("jarvis_profile", {"action": "edit", "name": "core", "remove": ["time"]}))
        result_json(await client.call_tool("jarvis_server", {"action": "uninstall", "name": "sequential-thinking"}))
        kept = result_json(await client.call_tool("jarvis_system", {"action": "bootstrap"}))
        # Repeating bootstrap does not undo the user's removals; it names them and the way back.
        assert kept["missing_defaults"] == ["time", "sequential-thinking"]
        assert any("restore=true" in step for step in kept["steps"])
        assert not {"time", "sequential-thinking"} & await _core_servers(client)
        restored = result_json(await client.call_tool("jarvis_system", {"action": "bootstrap", "restore": True}))
        assert restored["restored"] == ["time", "sequential-thinking"]
        assert {"time", "sequential-thinking"} <= await _core_servers(client)
        info = result_json(await client.call_tool("jarvis_server", {"action": "info", "name": "sequential-thinking"}))
        assert info["name"] == "sequential-thinking"
        again = result_json(await client.call_tool("jarvis_system", {"action": "bootstrap", "restore": True}))
        assert again.get("restored", []) == []
        assert again.get("missing_defaults", []) == []
