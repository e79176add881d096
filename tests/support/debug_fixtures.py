"""Fixtures of the debug tests: HTTP-level fakes of AWS (moto's server), LangSmith and Jira.

The suite's conftest registers them once per session. Their imports (moto, boto3, Starlette) are
inside the fixtures, so test runs that never use them never load them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.support.aws_fake import FakeAws


@pytest.fixture(scope="session")
def aws() -> Iterator[FakeAws]:
    from tests.support.aws_fake import fake_aws

    with fake_aws() as running:
        yield running


@pytest.fixture(scope="session")
def langsmith_url() -> Iterator[str]:
    from tests.support.http_fake import serve_app
    from tests.support.saas_fakes import langsmith_app

    with serve_app(langsmith_app()) as url:
        yield url


@pytest.fixture(scope="session")
def jira_url() -> Iterator[str]:
    from tests.support.http_fake import serve_app
    from tests.support.saas_fakes import jira_app

    with serve_app(jira_app()) as url:
        yield url


def saas_env(langsmith_url: str, jira_url: str) -> dict[str, str]:
    """LangSmith and Jira credentials pointing at the fakes."""
    from tests.support.saas_fakes import JIRA_EMAIL, JIRA_TOKEN, LANGSMITH_KEY

    return {
        "LANGSMITH_API_KEY": LANGSMITH_KEY,
        "LANGSMITH_ENDPOINT": langsmith_url,
        "JIRA_URL": jira_url,
        "JIRA_EMAIL": JIRA_EMAIL,
        "JIRA_API_TOKEN": JIRA_TOKEN,
    }


def write_credentials(path: Path, **values: str) -> Path:
    """A dotenv file such as the debug service reads on every call."""
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path
