"""Shared constants for client-config tests (a unique module name: tests dirs are not packages)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

SAMPLES = Path(__file__).parent / "samples"
AGGREGATOR = "http://127.0.0.1:8765"

# Where each client's config lives in a Linux home, and the sample in its real format.
LINUX_CONFIGS = {
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "claude_desktop_config.json"),
    "claude-code": (".claude.json", "claude.json"),
    "cursor": (".cursor/mcp.json", "cursor_mcp.json"),
    "vscode": (".config/Code/User/mcp.json", "vscode_mcp.json"),
    "windsurf": (".codeium/windsurf/mcp_config.json", "windsurf_mcp_config.json"),
}

Install = Callable[..., Path]
