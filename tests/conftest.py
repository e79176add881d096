"""Suite-wide settings: async tests run on asyncio through anyio's pytest plugin."""

from __future__ import annotations

import os

import pytest

# The fakes of AWS, LangSmith and Jira, once per session: moto keeps its state per process, so a
# second moto server in the same run would see the first one's data.
from tests.support.debug_fixtures import aws, jira_url, langsmith_url
from tests.support.docker_fixtures import engine, image, presets_image

__all__ = ["aws", "engine", "image", "jira_url", "langsmith_url", "presets_image"]  # fixtures, registered by being here

# Only loopback is reachable from tests. The debug backends use real client libraries, so a
# developer's own credentials, or boto3's instance-metadata lookup, must never send a request out:
# scrub credentials, disable IMDS and point boto3's default endpoint at a closed loopback port.
# LangSmith and Jira need a key to send anything; tests that set one also set a local fake's URL.
_CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_ENDPOINT",
    "JIRA_URL",
    "JIRA_EMAIL",
    "JIRA_API_TOKEN",
    "JARVIS_DEBUG_CREDENTIALS_FILE",
    "JARVIS_DEBUG_AWS_ENDPOINT_URL",
)
DEAD_ENDPOINT = "http://127.0.0.1:9"


def pytest_configure(config: pytest.Config) -> None:
    for name in _CREDENTIALS:
        os.environ.pop(name, None)
    os.environ.update(
        {
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": "/nonexistent/jarvis-tests/aws-config",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/jarvis-tests/aws-credentials",
            "AWS_ENDPOINT_URL": DEAD_ENDPOINT,  # an explicit endpoint (JARVIS_DEBUG_AWS_ENDPOINT_URL) wins over it
        }
    )


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
