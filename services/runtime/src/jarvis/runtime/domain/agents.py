"""Which agent a project or session runs, and exactly how one session of it is launched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jarvis.common.errors import InvalidArgument
from jarvis.runtime.domain.presets import ARGV, CUSTOM, check_agent_keys, preset
from jarvis.runtime.domain.validate import check_argv, check_protocol
from jarvis.runtime.settings import RuntimeSettings

# Secret values shorter than this are not masked in output: they would mask ordinary words.
MIN_REDACTED = 6
REDACTED = b"[secret]"


@dataclass(frozen=True)
class AgentChoice:
    agent: str  # a preset's name, or CUSTOM
    command: list[str]
    protocol: str


def choose(agent: str, agent_command: Sequence[str], agent_protocol: str, settings: RuntimeSettings) -> AgentChoice:
    """A project's agent: a preset by name, a custom command and protocol, or the runtime's default."""
    agent = (agent or "").strip()
    if agent and agent_command:
        raise InvalidArgument("give either agent (a preset) or agent_command (a custom agent), not both")
    if agent:
        p = preset(agent)
        return AgentChoice(p.name, list(p.command), p.protocol)
    if agent_command or settings.agent_command:
        command = check_argv(agent_command, "agent_command") if agent_command else list(settings.agent_command)
        return AgentChoice(CUSTOM, command, check_protocol(agent_protocol, settings.agent_protocol))
    p = preset(settings.agent)
    return AgentChoice(p.name, list(p.command), p.protocol)


@dataclass(frozen=True)
class Launch:
    agent: str
    argv: list[str]  # what runs
    command: list[str]  # what the session shows: the preset's template, without the prompt spliced in
    protocol: str
    env: dict[str, str]
    stdin_prompt: bool  # messages go to stdin; otherwise the prompt is in argv and stdin closes at once
    redact: tuple[bytes, ...]  # secret values masked in the agent's output


def launch(
    project_agent: str,
    project_command: Sequence[str],
    project_protocol: str,
    override: str,
    prompt: str,
    base_env: Mapping[str, str],
    secrets: Mapping[str, str],
) -> Launch:
    """How to start one session: the project's agent (or `override`, a preset), its env and secrets."""
    choice = (
        AgentChoice(preset(override).name, list(preset(override).command), preset(override).protocol)
        if override
        else AgentChoice(project_agent, list(project_command), project_protocol)
    )
    p = preset(choice.agent) if choice.agent != CUSTOM else None
    check_agent_keys(choice.agent, list(secrets))
    if p is not None and p.prompt == ARGV and not prompt:
        raise InvalidArgument(
            f"agent {p.name} takes its prompt when it starts: give prompt (each further prompt is "
            "a new session in the same workspace_id)"
        )
    # Secrets first: a preset's fixed variables and Jarvis's own always win over a stored value.
    env = {**secrets, **(p.env if p else {}), **base_env}
    values = {v.encode() for v in secrets.values() if len(v) >= MIN_REDACTED}
    return Launch(
        agent=choice.agent,
        argv=p.argv(prompt) if p else choice.command,
        command=choice.command,
        protocol=choice.protocol,
        env=env,
        stdin_prompt=p is None or p.prompt != ARGV,
        redact=tuple(sorted(values, key=len, reverse=True)),
    )


def redact(line: bytes, values: tuple[bytes, ...]) -> bytes:
    for value in values:
        if value in line:
            line = line.replace(value, REDACTED)
    return line
