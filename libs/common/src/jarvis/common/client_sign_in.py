"""The MCP clients that sign in to a Jarvis which serves sign-in, and how a person starts it in each (issue 48 item 4).

Each follows the MCP authorization spec on a 401: the protected resource's metadata, Jarvis's authorization server,
registration, the browser. Where Jarvis serves sign-in, an entry written for one of them carries no token (the person
signs in; their roles decide what it reaches), and its connection check says it needs authentication. Every other
client gets a token of its own. Where Jarvis requires tokens without serving sign-in, an entry without a token fails
in all of them (Claude Code: "Dynamic Client Registration rejected (HTTP 404)": it falls back to registering at
Jarvis's origin, which serves no registration then).

Gemini CLI is left out on purpose: it signs in only when asked (`/mcp auth <entry>` in a session), and until then its
`gemini mcp list` and its start show the entry "Disconnected", with nothing saying that a sign-in is missing.
"""

from __future__ import annotations

# Client name (the registry's formats.py) -> how a person signs in there, for the note `jarvis client edit` prints.
SIGN_IN_CLIENTS: dict[str, str] = {
    "claude-code": "run /mcp in Claude Code and choose Authenticate for each entry",
    "codex": "run `codex mcp login <entry>` for each entry",
    "opencode": "run `opencode mcp auth <entry>` for each entry",
    "vscode": "VS Code asks you to sign in when it first starts each entry",
    "cursor": "Cursor asks you to sign in when it first connects each entry (Settings, MCP, Login)",
}


def signs_in(client: str) -> bool:
    """Whether an entry for `client` works without a token where Jarvis serves sign-in."""
    return client in SIGN_IN_CLIENTS
