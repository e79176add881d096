"""Agent presets: how each agent CLI runs without a terminal, what it needs, and what it says.

A preset is data. The runtime reads `command`, `protocol`, `prompt` and the environment parts when it
spawns a session; the egress proxy reads `hosts` (the model APIs the agent must reach); the
orchestrator shows all of it in `project_options`.

`prompt` says how a prompt reaches the agent:
  stdin  a long-lived agent reading messages on its stdin (Claude Code's stream-json input): a session
         takes any number of messages.
  argv   a one-shot CLI: the prompt replaces `{prompt}` in the command, stdin is closed at once, and the
         session ends when the CLI exits (send the next prompt with a new session in the same workspace).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from jarvis.common.errors import FailedPrecondition, InvalidArgument

PROMPT_PLACEHOLDER = "{prompt}"
STDIN, ARGV = "stdin", "argv"
CUSTOM = ""  # a project's own agent_command and agent_protocol, no preset


@dataclass(frozen=True)
class AgentPreset:
    name: str
    command: tuple[str, ...]
    protocol: str  # a dialect of agent_protocol.DIALECTS
    prompt: str  # STDIN or ARGV
    # The agent needs at least one of these (its API key or token); spawn refuses without one.
    key_env: tuple[str, ...]
    base_url_env: tuple[str, ...]  # variables that point it at another API endpoint (a proxy, a local fake)
    hosts: tuple[str, ...]  # what it must reach: read by the egress proxy's allowlist
    env: dict[str, str] = field(default_factory=dict)  # fixed variables (non-interactive, no telemetry)
    description: str = ""

    def argv(self, prompt: str) -> list[str]:
        """The command line for one run; ARGV presets carry the prompt in it."""
        if self.prompt == ARGV:
            return [prompt if part == PROMPT_PLACEHOLDER else part for part in self.command]
        return list(self.command)


PRESETS: dict[str, AgentPreset] = {
    p.name: p
    for p in (
        AgentPreset(
            name="claude",
            prompt=STDIN,
            protocol="stream-json",
            # Claude Code's headless mode; the container is the sandbox, so it acts without asking.
            command=(
                "claude",
                "-p",
                "--input-format",
                "stream-json",
                "--output-format",
                "stream-json",
                "--verbose",
                "--permission-mode",
                "bypassPermissions",
            ),
            key_env=("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
            base_url_env=("ANTHROPIC_BASE_URL",),
            hosts=("api.anthropic.com",),
            env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"},
            description="Claude Code (@anthropic-ai/claude-code), stream-json in and out",
        ),
        AgentPreset(
            name="codex",
            prompt=ARGV,
            protocol="codex-json",
            command=(
                "codex",
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                PROMPT_PLACEHOLDER,
            ),
            key_env=("OPENAI_API_KEY", "CODEX_API_KEY"),
            base_url_env=("OPENAI_BASE_URL",),
            hosts=("api.openai.com",),
            description="Codex CLI (@openai/codex), `codex exec --json` JSONL events",
        ),
        AgentPreset(
            name="gemini",
            prompt=ARGV,
            protocol="gemini-json",
            command=("gemini", "--output-format", "stream-json", "--yolo", "-p", PROMPT_PLACEHOLDER),
            key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            base_url_env=("GOOGLE_GEMINI_BASE_URL",),
            hosts=("generativelanguage.googleapis.com",),
            description="Gemini CLI (@google/gemini-cli), stream-json JSONL events",
        ),
        AgentPreset(
            name="opencode",
            prompt=ARGV,
            protocol="opencode-json",
            command=("opencode", "run", "--format", "json", PROMPT_PLACEHOLDER),
            key_env=("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"),
            base_url_env=("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"),
            hosts=("api.anthropic.com", "api.openai.com", "models.dev"),
            description="OpenCode (opencode-ai), `opencode run --format json` events",
        ),
        AgentPreset(
            name="aider",
            prompt=ARGV,
            protocol="text",
            # --no-git: a workspace's .git is read-only (the host runs git there), and Aider's git setup writes the
            # repository's config first, so it would crash before its first edit; it edits the files in place instead.
            command=(
                "aider",
                "--yes-always",
                "--no-pretty",
                "--no-stream",
                "--no-git",
                "--no-check-update",
                "--analytics-disable",
                "--message",
                PROMPT_PLACEHOLDER,
            ),
            key_env=("OPENAI_API_KEY", "ANTHROPIC_API_KEY"),
            base_url_env=("OPENAI_API_BASE", "ANTHROPIC_BASE_URL"),
            hosts=("api.openai.com", "api.anthropic.com"),
            description="Aider (aider-chat), plain text",
        ),
    )
}


def preset(name: str) -> AgentPreset:
    """The preset called `name`, or InvalidArgument listing them."""
    found = PRESETS.get((name or "").strip())
    if found is None:
        raise InvalidArgument(
            f"unknown agent '{name[:40]}'; use one of: {', '.join(PRESETS)} (or give "
            "agent_command and agent_protocol for a custom agent)"
        )
    return found


def stdin_prompt(agent: str) -> bool:
    """Whether sessions of `agent` (a preset name, or CUSTOM) take their messages on stdin."""
    return agent == CUSTOM or PRESETS[agent].prompt == STDIN


def check_agent_keys(agent: str, names: Sequence[str]) -> None:
    """Refuse a preset agent whose API key is among none of the names its session will get."""
    if agent == CUSTOM:
        return
    p = PRESETS[agent]
    if p.key_env and not set(p.key_env) & set(names):
        raise FailedPrecondition(
            f"agent {p.name} needs one of {', '.join(p.key_env)} and the project has none of them; store one with "
            f"project action=secret_set name={p.key_env[0]} value=…"
        )
