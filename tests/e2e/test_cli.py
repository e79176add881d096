"""The `jarvis` command line as a person runs it: catalog import, tokens, status, distributed serving."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.scheduler_env import wait_for
from tests.support.stack import (
    error_text,
    free_port,
    jarvis_cli,
    mcp_client,
    result_json,
    start_jarvis,
    wait_for_url,
)

pytestmark = pytest.mark.anyio

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"

SERVER_JSON = {
    "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
    "name": "io.github.example/weather",
    "description": "Weather forecasts and alerts for any city",
    "version": "1.2.0",
    "packages": [
        {
            "registryType": "npm",
            "identifier": "@example/weather-mcp",
            "version": "1.2.0",
            "transport": {"type": "stdio"},
            "environmentVariables": [{"name": "WEATHER_API_KEY", "isRequired": True, "isSecret": True}],
        }
    ],
}


async def test_catalog_import_makes_servers_searchable_and_installable(tmp_path: Path) -> None:
    data = tmp_path / "data"
    livemcpbench = DATASETS / "livemcpbench" / "tools.json"
    imported = jarvis_cli("catalog", "import", str(livemcpbench), data_dir=data, env={"HOME": str(tmp_path)})
    assert "imported" in imported.stdout
    assert "reading" in imported.stderr  # progress goes to stderr
    server_json = tmp_path / "server.json"
    server_json.write_text(json.dumps(SERVER_JSON))
    jarvis_cli("catalog", "import", str(server_json), data_dir=data, env={"HOME": str(tmp_path)})
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    refused = jarvis_cli("catalog", "import", str(broken), data_dir=data, env={"HOME": str(tmp_path)}, check=False)
    assert refused.returncode != 0
    assert "broken.json" in refused.stderr or "JSON" in refused.stderr

    running = start_jarvis(data, env={"HOME": str(tmp_path)})
    try:
        async with mcp_client(running.url()) as client:
            found = result_json(
                await client.call_tool("jarvis_server", {"action": "search", "query": "weather alerts for a city"})
            )
            names = [h["name"] for h in found["results"]]
            assert names, found
            weather = next(h for h in found["results"] if "weather" in h["name"])
            needs_key = await client.call_tool("jarvis_server", {"action": "install", "name": weather["name"]})
            assert "WEATHER_API_KEY" in error_text(needs_key)
            installed = result_json(
                await client.call_tool(
                    "jarvis_server",
                    {
                        "action": "install",
                        "name": weather["name"],
                        "new_name": "weather",
                        "env": {"WEATHER_API_KEY": "k"},
                    },
                )
            )
            assert installed["installed"]["launch"]["command"] == "npx"
            # A LiveMCPBench server is found by one of its tools' words.
            by_tool = result_json(await client.call_tool("jarvis_server", {"action": "search", "query": "bing search"}))
            assert by_tool["results"][0]["matched_tools"], by_tool["results"][:2]
    finally:
        running.stop()


def test_up_on_a_busy_port_says_who_holds_it_and_starts_nothing(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        data = tmp_path / "data"
        busy = jarvis_cli("up", "--port", str(port), data_dir=data, env={"HOME": str(tmp_path)}, check=False)
    assert busy.returncode != 0
    lines = [line for line in busy.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, busy.stderr
    assert f"port {port} is already in use by pid {os.getpid()}" in lines[0]
    assert "--port" in lines[0]
    assert "Traceback" not in busy.stderr + busy.stdout
    assert not (data / "registry.db").exists()  # no service was started


def test_status_warns_of_a_data_dir_others_can_read_without_failing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    status = jarvis_cli("status", data_dir=data, env={"HOME": str(tmp_path)})
    warning = next(line for line in status.stdout.splitlines() if "data_dir" in line)
    assert warning.startswith("warn data_dir:")
    assert f"chmod 700 {data}" in warning
    assert "FAIL" not in status.stdout
    data.chmod(0o700)
    assert "ok   data_dir:" in jarvis_cli("status", data_dir=data, env={"HOME": str(tmp_path)}).stdout


def test_status_and_tokens_from_the_command_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"HOME": str(tmp_path)}
    status = jarvis_cli("status", data_dir=data, env=env)
    assert "ok   database" in status.stdout or "ok" in status.stdout.splitlines()[0]
    created = jarvis_cli("token", "create", "--name", "ci", "--scope", "jarvis:read", data_dir=data, env=env)
    secret = created.stdout.strip()
    assert secret.startswith("jv_")
    listed = json.loads(jarvis_cli("token", "list", "--json", data_dir=data, env=env).stdout)
    assert [t["name"] for t in listed] == ["ci"]
    assert secret not in json.dumps(listed)
    bad_scope = jarvis_cli("token", "create", "--name", "x", "--scope", "jar vis", data_dir=data, env=env, check=False)
    assert bad_scope.returncode != 0
    assert "<surface>" in bad_scope.stderr
    jarvis_cli("token", "revoke", listed[0]["id"], data_dir=data, env=env)
    assert json.loads(jarvis_cli("token", "list", "--json", data_dir=data, env=env).stdout) == []
    unknown = jarvis_cli("token", "revoke", "nope", data_dir=data, env=env, check=False)
    assert unknown.returncode != 0
    assert "nope" in unknown.stderr


# Runs the command line in this process's interpreter and says which modules it imported (on stderr's last line).
MODULES_AFTER = """
import json, sys
from jarvis.cli.main import cli
try:
    cli.main(sys.argv[1:], prog_name="jarvis", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_admin_commands_ask_the_jarvis_up_serving_the_data_dir(tmp_path: Path) -> None:
    """Beside a `jarvis up`, a command asks its registry (named in the data dir's lock file) and opens no database of
    its own (issue 46 item 2); once it stops, the command opens the data dir itself and finds the same records."""
    data = tmp_path / "data"
    env = {"HOME": str(tmp_path)}
    running = start_jarvis(data, env=env)
    try:
        assert json.loads((data / "jarvis.lock").read_text())["services"]["registry"].startswith("127.0.0.1:")
        secret = running.cli("token", "create", "--name", "ci", "--scope", "read").stdout.strip()
        assert secret.startswith("jv_")
        asked = subprocess.run(
            [sys.executable, "-c", MODULES_AFTER, "--data-dir", str(data), "token", "list", "--json"],
            env={**os.environ, "JARVIS_LOG_LEVEL": "WARNING", **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert [t["name"] for t in json.loads(asked.stdout)] == ["ci"], asked.stderr
        modules = set(json.loads(asked.stderr.strip().splitlines()[-1]))
        assert not {"jarvis.registry.app", "sqlalchemy"} & modules  # no registry of its own, no database
        assert "FAIL" not in running.cli("status").stdout
        assert "cursor" in running.cli("client", "list").stdout
    finally:
        running.stop()
    listed = json.loads(jarvis_cli("token", "list", "--json", data_dir=data, env=env).stdout)
    assert [t["name"] for t in listed] == ["ci"]


async def test_config_migrate_upgrades_an_old_file_with_backup(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.json").write_text(json.dumps({"aggregatorUrl": "http://127.0.0.1:9999", "logLevel": "DEBUG"}))
    running = start_jarvis(data, env={"HOME": str(tmp_path)})
    try:
        async with mcp_client(running.url()) as client:
            migrated = result_json(await client.call_tool("jarvis_config", {"action": "migrate"}))
            again = result_json(await client.call_tool("jarvis_config", {"action": "migrate"}))
            url = result_json(await client.call_tool("jarvis_config", {"action": "get", "key": "aggregator_url"}))
    finally:
        running.stop()
    assert (migrated["from_version"], migrated["to_version"]) == (1, 2)
    assert migrated["backup_path"]
    assert json.loads(Path(migrated["backup_path"]).read_text())["aggregatorUrl"] == "http://127.0.0.1:9999"
    assert json.loads((data / "config.json").read_text())["version"] == 2
    assert not again["backup_path"]
    assert url["value"] == "http://127.0.0.1:9999"


async def test_distributed_mode_registry_and_aggregator_processes(tmp_path: Path) -> None:
    registry_port, aggregator_port = free_port(), free_port()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JARVIS_LOG_LEVEL": "WARNING",
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path / "registry"),
        "JARVIS_REGISTRY_LISTEN": f"127.0.0.1:{registry_port}",
        "JARVIS_AGGREGATOR_PORT": str(aggregator_port),
        "JARVIS_AGGREGATOR_REGISTRY_TARGET": f"127.0.0.1:{registry_port}",
    }
    (tmp_path / "registry").mkdir()
    registry = subprocess.Popen([sys.executable, "-m", "jarvis.cli", "serve", "registry"], env=env)
    aggregator = subprocess.Popen([sys.executable, "-m", "jarvis.cli", "serve", "aggregator"], env=env)
    try:
        wait_for_url(f"http://127.0.0.1:{aggregator_port}/healthz")
        url = f"http://127.0.0.1:{aggregator_port}/mcp/jarvis"
        async with mcp_client(url) as client:
            booted = result_json(await client.call_tool("jarvis_system", {"action": "bootstrap"}))
            assert booted["catalog_entries"] > 0
            status = result_json(await client.call_tool("jarvis_check_status", {}))
            assert status["aggregator"]["mode"] == "distributed"
            assert status["services"]["registry"]["ok"] is True
            # Nothing there is this aggregator's to restart: it says why for each service, with its health.
            infra = result_json(await client.call_tool("jarvis_system", {"action": "restart_infra"}))
            assert infra["restarted"] == []
            services = {s["component"]: s for s in infra["not_restarted"]}
            assert "orchestrator" in services["registry"]["why"]
            assert services["registry"]["health"]["ok"] is True
            assert services["runtime"]["health"]["ok"] is None  # not deployed here
        # The admin CLI can point at the running registry instead of a data dir.
        listed = subprocess.run(
            [sys.executable, "-m", "jarvis.cli", "--registry", f"127.0.0.1:{registry_port}", "status"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr
    finally:
        for process in (aggregator, registry):
            process.terminate()
        # Both stop gracefully within their grace period; uvicorn re-raises SIGTERM once it has drained.
        assert registry.wait(15) == 0
        assert aggregator.wait(15) in (0, -signal.SIGTERM)


def test_beyond_loopback_requires_tokens(tmp_path: Path) -> None:
    """`--host 0.0.0.0` turns auth on even when --no-require-auth is given."""
    running = start_jarvis(tmp_path / "data", "--host", "0.0.0.0", "--no-require-auth", env={"HOME": str(tmp_path)})
    try:
        import httpx2

        response = httpx2.post(
            running.url(),
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert response.status_code == 401
        # The banner follows the port's first answer by up to uvicorn's 50 ms start-up poll (cli/runner.py).
        wait_for(lambda: "token required" in running.log() or None, 10, running.log)
        # The banner's connect lines work as printed: how to get a token, and the header to send it in.
        log = running.log()
        printed = next(line for line in log.splitlines() if "1. create one:" in line)
        command = printed.split("create one:", 1)[1].split("(prints", 1)[0].strip()
        assert command.endswith(" token create --name me --scope jarvis")
        made = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=60, check=False)
        assert made.returncode == 0, made.stderr  # it runs as printed, from any directory, with this data dir
        assert made.stdout.strip().startswith("jv_")
        claude = next(line for line in log.splitlines() if "claude mcp add" in line)
        assert claude.rstrip().endswith(f'{running.url("/mcp")} --header "Authorization: Bearer $JARVIS_TOKEN"')
        assert '"headers": {"Authorization": "Bearer <the secret>"}' in log
    finally:
        running.stop()


def test_a_big_catalog_imports_behind_a_progress_bar(tmp_path: Path) -> None:
    servers = [{**SERVER_JSON, "name": f"io.github.example/weather-{i}"} for i in range(450)]
    catalog = tmp_path / "servers.json"
    catalog.write_text(json.dumps({"servers": servers}))
    done = jarvis_cli("catalog", "import", str(catalog), data_dir=tmp_path / "data", env={"HOME": str(tmp_path)})
    assert "imported 450 new" in done.stdout
    assert "importing 450 servers" in done.stderr  # the bar's label; off a terminal click draws no bar


def test_mcp_surface_choice_names_profiles_too(tmp_path: Path) -> None:
    bad = jarvis_cli("mcp", "--surface", "nope", data_dir=tmp_path / "data", env={"HOME": str(tmp_path)}, check=False)
    assert bad.returncode != 0
    assert "profile/<name>" in bad.stderr
    unknown = jarvis_cli(
        "mcp", "--surface", "profile/ghost", data_dir=tmp_path / "data", env={"HOME": str(tmp_path)}, check=False
    )
    assert unknown.returncode != 0
    assert "no profile named 'ghost'" in unknown.stderr


async def test_status_and_check_status_agree_when_docker_is_down(tmp_path: Path) -> None:
    """Issue 46 item 3: with no Docker engine the runtime can reach, `jarvis_check_status` said unhealthy while
    `jarvis status` showed every check ok. Beside a running `jarvis up`, the command now asks its services and
    daemons with the same probes: both fail, naming the engine and the setting to fix."""
    data = tmp_path / "data"
    env = {"HOME": str(tmp_path), "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    running = start_jarvis(data, env=env)
    try:
        async with mcp_client(running.url()) as client:
            checked = result_json(await client.call_tool("jarvis_check_status", {}))
        shown = running.cli("status", check=False)
    finally:
        running.stop()
    assert checked["healthy"] is False
    assert checked["daemons"]["docker"]["ok"] is False
    assert shown.returncode == 1, shown.stdout
    docker = next(line for line in shown.stdout.splitlines() if " docker: " in line)
    assert docker == f"FAIL docker: {checked['daemons']['docker']['detail']}"
    assert "DOCKER_HOST" in docker
    assert "ok   runtime: " in shown.stdout  # the runtime serves; it is its engine that is down
    # Once that `jarvis up` is gone, the command says it checked only the registry, and why.
    alone = jarvis_cli("status", data_dir=data, env=env, check=False)
    assert "no `jarvis up` serves" in alone.stdout
    assert " docker: " not in alone.stdout
