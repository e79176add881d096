"""Gateways wired to HTTP-level fakes of AWS (moto's server), LangSmith and Jira."""

from __future__ import annotations

from pathlib import Path

import pytest

from jarvis.debug.app import build_backends
from jarvis.debug.domain.gateway import Gateway
from jarvis.debug.settings import DebugSettings
from tests.support.aws_fake import ACCESS_KEY, REGION, SECRET_KEY, FakeAws
from tests.support.debug_fixtures import saas_env, write_credentials


@pytest.fixture
def credentials_file(tmp_path: Path, aws: FakeAws, langsmith_url: str, jira_url: str) -> Path:
    """Every backend's credentials in the dotenv file the debug service reads on each call."""
    return write_credentials(
        tmp_path / "debug.env",
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_REGION=REGION,
        **saas_env(langsmith_url, jira_url),
    )


@pytest.fixture
def settings(credentials_file: Path, aws: FakeAws) -> DebugSettings:
    return DebugSettings(credentials_file=credentials_file, aws_endpoint_url=aws.endpoint_url, timeout_seconds=5)


@pytest.fixture
def gateway(settings: DebugSettings) -> Gateway:
    return Gateway(build_backends(settings))
