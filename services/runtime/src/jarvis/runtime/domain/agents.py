"""Which agent a project or session runs, and exactly how one session of it is launched."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jarvis.common.errors import InvalidArgument
from jarvis.runtime.domain.presets import ARGV, CUSTOM, check_agent_keys, preset
from jarvis.runtime.domain.validate import check_argv, check_protocol
from jarvis.runtime.settings import RuntimeSettings

# Secret values shorter than this are not masked in output: they would mask ordinary words.
MIN_REDACTED = 6
REDACTED = b"[secret]"
_MASK = REDACTED.decode()


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
    masked: Mapping[str, str] | None = None,
) -> Launch:
    """How to start one session: the project's agent (or `override`, a preset), its env and secrets, and `masked`,
    Jarvis's own variables for it (its credential), which win over both and are masked in its output too."""
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
    masked = masked or {}
    env = {**secrets, **(p.env if p else {}), **masked, **base_env}
    values = {v.encode() for v in (*secrets.values(), *masked.values()) if len(v) >= MIN_REDACTED}
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
    """`line` with every secret masked (see `redact_text`)."""
    if not values:
        return line
    return redact_text(line.decode("utf-8", errors="replace"), secret_texts(values)).encode()


def secret_texts(values: tuple[bytes, ...]) -> tuple[str, ...]:
    return tuple(v.decode("utf-8", errors="replace") for v in values)


# A JSON string literal, and the escapes JSON (and so every agent's JSON output) may write a character as.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def redact_text(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret masked: as written, as JSON writes it in a string (`\\"`, `\\\\`, `\\u002d`,
    any mix), and so also inside a JSON string literal or an escaped run that decodes to it."""
    if not secrets:
        return text
    text = _replace(text, secrets)
    if "\\" not in text:
        return text
    # Whatever a JSON reader would decode: each string literal (keeping the line's JSON intact where it is
    # JSON), then the whole text read as one escaped run (an agent printing a value JSON-escaped, unquoted).
    text = _JSON_STRING.sub(lambda m: _masked_literal(m.group(0), secrets), text)
    if "\\" in text:
        decoded = _unescape(text)
        if decoded != text and _replace(decoded, secrets) != decoded:
            return _replace(decoded, secrets)
    return text


def redact_value(value: Any, secrets: tuple[str, ...]) -> tuple[Any, bool]:
    """A decoded JSON value with every string in it (object keys too) masked by `redact_text`; and whether any was."""
    if isinstance(value, str):
        masked = redact_text(value, secrets)
        return masked, masked != value
    if isinstance(value, list):
        items = [redact_value(v, secrets) for v in value]
        return [v for v, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key, key_changed = redact_value(key, secrets)
            new_item, item_changed = redact_value(item, secrets)
            out[new_key] = new_item
            changed = changed or key_changed or item_changed
        return out, changed
    return value, False


def _replace(text: str, secrets: tuple[str, ...]) -> str:
    # Longest first: `"abcdef` written escaped is `\\"abcdef`, which must go whole, not leave its `\\`.
    for form in sorted({f for secret in secrets for f in _forms(secret)}, key=len, reverse=True):
        if form in text:
            text = text.replace(form, _MASK)
    return text


@functools.lru_cache(maxsize=256)
def _forms(secret: str) -> tuple[str, ...]:
    """The secret, and the ways a JSON encoder writes it inside a string (escaped, with or without `\\uXXXX`)."""
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    ascii_escaped = json.dumps(secret)[1:-1]
    return tuple(dict.fromkeys((secret, escaped, ascii_escaped, escaped.replace("/", "\\/"))))


def _masked_literal(literal: str, secrets: tuple[str, ...]) -> str:
    if "\\" not in literal:
        return literal
    try:
        decoded = json.loads(literal)
    except ValueError:
        return literal
    masked = redact_text(decoded, secrets)
    return literal if masked == decoded else json.dumps(masked, ensure_ascii=False)


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return chr(int(code[1:], 16)) if code[0] == "u" else _SIMPLE_ESCAPES[code]

    decoded = _JSON_ESCAPE.sub(one, text)
    # `\\ud83d\\ude00` decodes to two surrogates: join them into the character they spell.
    return decoded.encode("utf-16-le", errors="surrogatepass").decode("utf-16-le", errors="replace")
