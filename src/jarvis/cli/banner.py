"""What `jarvis up` prints once it serves: where each surface is, and lines a person can paste into a client."""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_PATH = "/mcp"  # the default surface (spec 003): five tools in front of everything else


def banner(
    data_dir: str, base: str, surfaces: Iterable[tuple[str, str]], auth_required: bool, sign_in: str = ""
) -> list[str]:
    """The lines; `surfaces` are (name, path) pairs; `sign_in` is the OpenID provider people log in at, if any."""
    auth = "token required" if auth_required else "open on loopback (no token needed)"
    url = base + DEFAULT_PATH
    lines = [
        f"Jarvis is up (data: {data_dir}; auth: {auth})",
        *(f"  MCP {name:<12} {base}{path}" for name, path in surfaces),
        f"  health           {base}/livez (alive), {base}/readyz (backends answering)",
        f"  metrics          {base}/metrics" + (" (a token of scope metrics)" if auth_required else ""),
    ]
    if not auth_required:
        return [
            *lines,
            "Connect a client:",
            f"  Claude Code:  claude mcp add --transport http jarvis {url}",
            f'  Cursor:       in ~/.cursor/mcp.json, "mcpServers": {{"jarvis": {{"url": "{url}"}}}}',
            "Stop with Ctrl-C.",
        ]
    if sign_in:
        lines += [
            f"People sign in at {sign_in}: a client that follows the MCP authorization spec needs no token",
            f"  Claude Code:  claude mcp add --transport http jarvis {url}   (then /mcp in Claude Code to log in)",
        ]
    return [
        *lines,
        "Connect a client (every request needs a token):" if not sign_in else "Or with a token (machines, scripts):",
        "  1. create one:  jarvis token create --name me --scope jarvis   (prints the secret once)",
        "  2. export JARVIS_TOKEN=<the secret>",
        f'  Claude Code:  claude mcp add --transport http jarvis {url} --header "Authorization: Bearer $JARVIS_TOKEN"',
        f'  Cursor:       in ~/.cursor/mcp.json, "mcpServers": {{"jarvis": {{"url": "{url}", '
        '"headers": {"Authorization": "Bearer <the secret>"}}}',
        "Stop with Ctrl-C.",
    ]
