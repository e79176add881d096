"""The shipped alert rules, evaluated by a real Prometheus scraping a real `jarvis up`.

Prometheus (Debian's package) scrapes the aggregator's /metrics and a dead port every second and evaluates a
copy of deploy/prometheus/rules/jarvis.yml whose `for:` durations are cut to 0 s, so an alert that would fire
in production after minutes fires here within seconds. A failing downstream server must raise the failing-
servers and flapping alerts, naming the server; the dead target must raise the target-down alert; the healthy
server and the healthy aggregator must raise nothing.

Jarvis runs with `--require-auth`, so /metrics needs a token: Prometheus reads one of scope `metrics` from a file
(`authorization: {credentials_file: ...}`), as deploy/prometheus/prometheus.yml does.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
import yaml

from tests.support.downstream import FAST_ENV, create_profile, create_toy, eventually, text_of
from tests.support.required_tool import required_tool
from tests.support.stack import REPO, RunningJarvis, free_port, mcp_client, start_jarvis, wait_for_url

pytestmark = pytest.mark.anyio

RULES = REPO / "deploy" / "prometheus" / "rules" / "jarvis.yml"


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    env = {"HOME": str(tmp_path_factory.mktemp("home")), **FAST_ENV}
    running = start_jarvis(tmp_path_factory.mktemp("alerts"), "--require-auth", env=env)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def prometheus(jarvis: RunningJarvis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = required_tool("prometheus")
    work = tmp_path_factory.mktemp("prometheus")
    credentials = work / "metrics_token"
    credentials.write_text(jarvis.create_token("metrics", name="prometheus") + "\n")
    fast_rules = re.sub(r"(?m)^(\s+for:) \S+$", r"\1 0s", RULES.read_text())
    (work / "rules.yml").write_text(fast_rules)
    dead = free_port()  # nothing listens here: a registry that is down
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
        "rule_files": [str(work / "rules.yml")],
        "scrape_configs": [
            {
                "job_name": "aggregator",
                "static_configs": [{"targets": [f"127.0.0.1:{jarvis.port}"]}],
                "authorization": {"type": "Bearer", "credentials_file": str(credentials)},
            },
            {"job_name": "registry", "static_configs": [{"targets": [f"127.0.0.1:{dead}"]}]},
        ],
    }
    (work / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = (work / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-lifecycle",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_url(f"http://127.0.0.1:{port}/-/ready", timeout=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _firing(prometheus: str) -> list[dict[str, Any]]:
    alerts = httpx2.get(f"{prometheus}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
    return [a for a in alerts if a["state"] == "firing"]


def _query(prometheus: str, expr: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = httpx2.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=5).json()[
        "data"
    ]["result"]
    return result


def _find(alerts: list[dict[str, Any]], name: str, **labels: str) -> dict[str, Any] | None:
    return next(
        (
            a
            for a in alerts
            if a["labels"]["alertname"] == name and all(a["labels"].get(k) == v for k, v in labels.items())
        ),
        None,
    )


@pytest.fixture(scope="module")
def admin_token(jarvis: RunningJarvis) -> str:
    return jarvis.create_token("admin", name="admin")


async def test_a_failing_server_and_a_dead_target_raise_their_alerts(
    jarvis: RunningJarvis, prometheus: str, admin_token: str
) -> None:
    async with mcp_client(jarvis.url(), admin_token) as admin:
        await create_toy(admin, "steady")
        await create_toy(admin, "doomed", "exit")  # dies before initialize, every time
        await create_profile(admin, "ops", "steady", "doomed")
    async with mcp_client(jarvis.url("/mcp/profile/ops"), admin_token) as client:
        await client.list_tools()  # starts both servers
        for _ in range(3):
            assert not (await client.call_tool("steady__echo", {"text": "hi"})).is_error, "steady must answer"
        failed = await client.call_tool("steady__fail", {})
        assert failed.is_error, text_of(failed)

    def alerts_fired() -> list[dict[str, Any]] | None:
        firing = _firing(prometheus)
        wanted = (
            _find(firing, "JarvisDownstreamServersFailing", job="aggregator"),
            _find(firing, "JarvisDownstreamServerFlapping", server="doomed"),
            _find(firing, "JarvisTargetDown", job="registry"),
        )
        return firing if all(wanted) else None

    firing = await eventually(_async(alerts_fired), timeout=60, what="the failing-server and target-down alerts")
    assert _find(firing, "JarvisTargetDown", job="aggregator") is None  # the live one is up
    assert not [a for a in firing if a["labels"].get("server") == "steady"]
    # Flapping is what the rule measured when it fired: start failures plus restarts over 15 minutes, as increase()
    # extrapolates them, above 3. That is the alert's own value, not a second reading of a raw counter, which may
    # still read 3 or less when increase() passed 3 (and a later evaluation of the same increase() may differ).
    flapping = _find(firing, "JarvisDownstreamServerFlapping", server="doomed")
    assert flapping is not None
    assert float(flapping["value"]) > 3, flapping
    # The alerts stand on per-server series that Prometheus really scraped from Jarvis.
    assert _query(prometheus, 'up{job="aggregator"} == 1')
    failures = _query(prometheus, 'jarvis_downstream_server_start_failures_total{server="doomed"}')
    assert failures, "the doomed server's start failures were never scraped"
    assert float(failures[0]["value"][1]) >= 1, failures
    calls = _query(prometheus, 'jarvis_downstream_calls_total{server="steady"}')
    assert {c["metric"]["outcome"]: float(c["value"][1]) for c in calls} == {"ok": 3.0, "error": 1.0}


def _async(check: Any) -> Any:
    async def run() -> Any:
        return check()

    return run
