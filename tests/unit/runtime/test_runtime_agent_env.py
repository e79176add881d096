"""Jarvis's own environment for an agent (decision 0057): JARVIS_* only, never the runtime's own variables, winning
over the project's secrets and masked in the agent's output like them."""

from __future__ import annotations

import pytest

from jarvis.common.errors import InvalidArgument
from jarvis.runtime.domain.agents import launch, redact
from jarvis.runtime.domain.spawn import checked_agent_env

TOKEN = "eyJhbGciOi.credential.signature"


@pytest.mark.parametrize(
    "env",
    [
        {"PATH": "/bin"},
        {"jarvis_token": "x"},
        {"JARVIS_SESSION_ID": "s000000000000"},
        {"JARVIS_PROJECT_ID": "p1"},
        {"JARVIS_WORKSPACE": "/tmp"},
        {"JARVIS_TOKEN": "x" * (16 * 1024 + 1)},
        {"JARVIS_TOKEN": "a\0b"},
    ],
)
def test_agent_env_sets_only_jarvis_variables_the_runtime_does_not(env: dict[str, str]) -> None:
    with pytest.raises(InvalidArgument):
        checked_agent_env(env)


def test_the_credential_wins_over_a_secret_and_is_masked_in_output() -> None:
    env = checked_agent_env({"JARVIS_TOKEN": TOKEN, "JARVIS_URL": "http://127.0.0.1:1/mcp/orchestrator"})
    how = launch("", ["agent"], "stream-json", "", "", {"JARVIS_SESSION_ID": "s1"}, {"JARVIS_TOKEN_X": "x"}, masked=env)
    assert how.env["JARVIS_TOKEN"] == TOKEN
    assert how.env["JARVIS_SESSION_ID"] == "s1"
    shown = redact(f'{{"text": "my token is {TOKEN}"}}'.encode(), how.redact).decode()
    assert TOKEN not in shown
