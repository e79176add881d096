"""/metrics names installed servers and tools: where tokens are required it needs one of scope `metrics` (which
allows nothing else) or admin (issue 34); an open loopback Jarvis still serves it to anyone on the host."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from tests.support.stack import RunningJarvis, start_jarvis

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    running = start_jarvis(
        tmp_path_factory.mktemp("metrics"), "--require-auth", env={"HOME": str(tmp_path_factory.mktemp("home"))}
    )
    yield running
    running.stop()


def scrape(running: RunningJarvis, token: str | None = None) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.get(running.url("/metrics"), headers=headers, timeout=10)


def test_metrics_need_a_token_when_auth_is_required(secured: RunningJarvis) -> None:
    refused = scrape(secured)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith('Bearer realm="jarvis"')
    assert "jarvis_" not in refused.text
    assert "--scope metrics" in refused.json()["message"]

    invalid = scrape(secured, "jv_not-a-token")
    assert invalid.status_code == 401
    assert 'error="invalid_token"' in invalid.headers["www-authenticate"]


def test_a_read_token_may_not_read_metrics(secured: RunningJarvis) -> None:
    refused = scrape(secured, secured.create_token("read", name="reader"))
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert "jarvis_" not in refused.text


def test_a_metrics_token_reads_metrics_and_nothing_else(secured: RunningJarvis) -> None:
    token = secured.create_token("metrics", name="prometheus")
    answer = scrape(secured, token)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    assert "jarvis_auth_failures_total" in answer.text
    # The scope opens no surface.
    mcp = httpx2.post(
        secured.url("/mcp/jarvis"),
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        timeout=10,
    )
    assert mcp.status_code == 403
    assert scrape(secured, secured.create_token("admin", name="ops")).status_code == 200


def test_a_metrics_scope_is_not_narrowed(secured: RunningJarvis) -> None:
    made = secured.cli("token", "create", "--name", "x", "--scope", "metrics:servers", check=False)
    assert made.returncode != 0
    assert "takes no tool, action or project" in made.stderr


def test_loopback_open_jarvis_serves_metrics_without_a_token(tmp_path_factory: pytest.TempPathFactory) -> None:
    running = start_jarvis(tmp_path_factory.mktemp("open"), env={"HOME": str(tmp_path_factory.mktemp("home"))})
    try:
        answer = scrape(running)
        assert answer.status_code == 200
        assert "jarvis_" in answer.text
    finally:
        running.stop()


def test_the_setting_turns_it_either_way(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = str(tmp_path_factory.mktemp("home"))
    closed = start_jarvis(
        tmp_path_factory.mktemp("closed"), env={"HOME": home, "JARVIS_AGGREGATOR_METRICS_REQUIRE_TOKEN": "true"}
    )
    try:
        assert scrape(closed).status_code == 401
    finally:
        closed.stop()
    opened = start_jarvis(
        tmp_path_factory.mktemp("opened"),
        "--require-auth",
        env={"HOME": home, "JARVIS_AGGREGATOR_METRICS_REQUIRE_TOKEN": "false"},
    )
    try:
        assert scrape(opened).status_code == 200
    finally:
        opened.stop()
