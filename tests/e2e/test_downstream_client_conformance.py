"""Jarvis as the client the official conformance suite judges (0.2.0-alpha.12, client scenarios): each scenario's
test server is put behind a one-server, unprefixed, interactive profile of a running Jarvis, and an agent acts on
that profile (tests/support/conformance_client.py): what the scenario judges is what Jarvis sent its server.

The suite's verdict is taken as it gives it: a scenario passes when no check failed or warned and the client ended
well. Every scenario passes but those named in FAILING with why.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.conformance import Check, ClientRun, run_client
from tests.support.stack import RunningJarvis, start_jarvis

pytestmark = [pytest.mark.anyio, pytest.mark.node]

# The client scenarios that need no authorization, each at the version the suite runs it in.
SCENARIOS = (
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
)
# Those that do not pass through Jarvis, with why; the test fails when one starts passing, so this only shrinks.
FAILING: dict[str, str] = {}
# The client id the suite's `auth/basic-cimd` authorization server expects: its own example client's document URL.
SUITE_CIMD_URL = "https://conformance-test.local/client-metadata.json"


def _jarvis(tmp_path_factory: pytest.TempPathFactory, **env: str) -> Iterator[RunningJarvis]:
    # Loopback: the auth scenarios' authorization servers are on localhost, as is Jarvis's own client document.
    env = {"HOME": str(tmp_path_factory.mktemp("home")), "JARVIS_DOWNSTREAM_OAUTH_ALLOW_LOOPBACK": "true", **env}
    running = start_jarvis(tmp_path_factory.mktemp("client-conformance"), env=env)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def jarvis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    yield from _jarvis(tmp_path_factory)


def _report(run: ClientRun) -> None:
    print(f"{'PASS' if run.passed else 'FAIL'} {run.scenario}")
    for reason in run.reasons():
        print(f"    {reason[:300]}")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_client_scenario_through_a_profile(jarvis: RunningJarvis, scenario: str, tmp_path: Path) -> None:
    run = run_client(jarvis.base_url, scenario, tmp_path)
    _report(run)
    if scenario in FAILING:
        assert not run.passed, f"{scenario} passes through Jarvis now: drop it from FAILING"
    else:
        assert run.passed, run.reasons()


def _cimd_check(run: ClientRun) -> Check:
    return next(check for check in run.checks if check.id == "cimd-client-id-used")


def test_basic_cimd_jarvis_names_itself_by_its_own_document(jarvis: RunningJarvis, tmp_path: Path) -> None:
    """With no setting, the authorization server that takes URL client ids is given Jarvis's own document's URL
    (its public URL is loopback, which tests allow), and no client is registered. The suite only warns here: it
    expects the URL of its own example client's document, which no client but that example names."""
    run = run_client(jarvis.base_url, "auth/basic-cimd", tmp_path)
    _report(run)
    assert _cimd_check(run).details["actualClientId"] == jarvis.base_url + "/oauth/downstream/client.json"
    assert not [check for check in run.checks if check.id == "client-registration"]
    assert run.reasons() == ["WARNING cimd-client-id-used: "], run.reasons()


@pytest.fixture(scope="module")
def suite_named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """A Jarvis whose client document is published at the URL the suite expects (JARVIS_DOWNSTREAM_OAUTH_CLIENT_
    METADATA_URL, as an admin who hosts it elsewhere sets it)."""
    yield from _jarvis(tmp_path_factory, JARVIS_DOWNSTREAM_OAUTH_CLIENT_METADATA_URL=SUITE_CIMD_URL)


def test_basic_cimd_through_a_profile(suite_named: RunningJarvis, tmp_path: Path) -> None:
    run = run_client(suite_named.base_url, "auth/basic-cimd", tmp_path)
    _report(run)
    assert _cimd_check(run).status == "SUCCESS", run.reasons()
    assert run.passed, run.reasons()
