"""What `jarvis up` prints once it serves: where each surface is, and lines a person can paste into a client."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

DEFAULT_PATH = "/mcp"  # the default surface (spec 003): five tools in front of everything else
CLIENTS = "claude-code, codex, gemini, opencode, cursor, vscode, windsurf, …"


def invocation(data_dir: str | None = None) -> str:
    """The command that runs this same Jarvis, as a person can type it: `jarvis` where that is on PATH, else the
    venv's own `jarvis` by its path (a venv's bin is rarely on PATH), else this interpreter with `-m jarvis.cli`;
    with `--data-dir` where one was given, so the command reaches the same data."""
    script = Path(sys.executable).parent / "jarvis"
    on_path = shutil.which("jarvis")
    if on_path is not None and script.exists() and os.path.samefile(on_path, script):
        command = "jarvis"
    elif script.exists():
        command = shlex.quote(str(script))
    else:
        command = f"{shlex.quote(sys.executable)} -m jarvis.cli"
    return command + (f" --data-dir {shlex.quote(data_dir)}" if data_dir else "")


def banner(
    data_dir: str,
    base: str,
    surfaces: Iterable[tuple[str, str]],
    auth_required: bool,
    sign_in: str = "",
    command: str = "jarvis",
) -> list[str]:
    """The lines; `surfaces` are (name, path) pairs; `sign_in` is the OpenID provider people log in at, if any;
    `command` runs this Jarvis's CLI as printed (`invocation`)."""
    auth = "token required" if auth_required else "open on loopback (no token needed)"
    url = base + DEFAULT_PATH
    edit = f"  Any client:   {command} client edit <client> --add discovery   (<client>: {CLIENTS})"
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
            edit,
            "Stop with Ctrl-C.",
        ]
    if sign_in:
        lines += [
            f"People sign in at {sign_in}: a client that follows the MCP authorization spec needs no token",
            f"  Claude Code:  claude mcp add --transport http jarvis {url}   (then /mcp in Claude Code to log in)",
        ]
    written = "a token of its own where the client cannot sign in" if sign_in else "writes a token of its own"
    return [
        *lines,
        "Connect a client (every request needs a token):" if not sign_in else "Or with a token (machines, scripts):",
        f"  1. create one:  {command} token create --name me --scope jarvis   (prints the secret once)",
        "  2. export JARVIS_TOKEN=<the secret>",
        f'  Claude Code:  claude mcp add --transport http jarvis {url} --header "Authorization: Bearer $JARVIS_TOKEN"',
        f'  Cursor:       in ~/.cursor/mcp.json, "mcpServers": {{"jarvis": {{"url": "{url}", '
        '"headers": {"Authorization": "Bearer <the secret>"}}}',
        edit + f"   ({written})",
        "Stop with Ctrl-C.",
    ]
