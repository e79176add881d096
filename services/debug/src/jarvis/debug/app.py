"""The debug service's composition root: every backend, from settings, behind one gateway."""

from __future__ import annotations

from jarvis.debug.backends.aws import AwsClients, AwsConfig
from jarvis.debug.backends.base import Backend
from jarvis.debug.backends.cloudwatch import CloudWatchBackend
from jarvis.debug.backends.credentials import Credentials
from jarvis.debug.backends.jira import JiraBackend
from jarvis.debug.backends.langsmith import LangSmithBackend
from jarvis.debug.backends.project import ProjectBackend
from jarvis.debug.backends.stepfunctions import StepFunctionsBackend
from jarvis.debug.domain.gateway import Gateway
from jarvis.debug.settings import DebugSettings


def build_backends(settings: DebugSettings) -> list[Backend]:
    """Every backend this process serves, one per line, in the order `list` shows them."""
    credentials = Credentials(settings.credentials_file)
    aws = AwsClients(AwsConfig(settings.aws_endpoint_url, settings.aws_region, settings.timeout_seconds), credentials)
    return [
        CloudWatchBackend(aws),
        StepFunctionsBackend(aws),
        LangSmithBackend(credentials, settings.timeout_seconds),
        JiraBackend(credentials, settings.timeout_seconds),
        ProjectBackend(credentials),
    ]


def open_gateway(settings: DebugSettings) -> Gateway:
    """The gateway over every backend `settings` describe."""
    return Gateway(build_backends(settings))
