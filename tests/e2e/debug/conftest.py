"""Real `jarvis up` processes whose debug backends talk to local fakes of AWS, LangSmith and Jira."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.aws_fake import FakeAws
from tests.support.debug_fixtures import saas_env
from tests.support.stack import RunningJarvis, start_jarvis

# The removed filter of the old debug server: set here to show it changes nothing.
OLD_FILTER = {"DEBUG_MCP_TOOLS": "describe_log_groups"}


@pytest.fixture(scope="module")
def configured(
    tmp_path_factory: pytest.TempPathFactory, aws: FakeAws, langsmith_url: str, jira_url: str
) -> Iterator[RunningJarvis]:
    """Jarvis whose environment has every backend's (dummy) credentials and the fakes' endpoints."""
    env = {"HOME": str(tmp_path_factory.mktemp("home")), **aws.env(), **saas_env(langsmith_url, jira_url), **OLD_FILTER}
    running = start_jarvis(tmp_path_factory.mktemp("debug-configured"), env=env)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    """Jarvis with no credentials at all (the suite's conftest scrubbed them and disabled AWS IMDS)."""
    running = start_jarvis(tmp_path_factory.mktemp("debug-bare"), env={"HOME": str(tmp_path_factory.mktemp("home"))})
    yield running
    running.stop()
