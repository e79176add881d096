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
    "codex": (".codex/config.toml", "codex_config.toml"),
    "gemini": (".gemini/settings.json", "gemini_settings.json"),
    "goose": (".config/goose/config.yaml", "goose_config.yaml"),
    "continue": (".continue/config.yaml", "continue_config.yaml"),
    "cline": (
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        "cline_mcp_settings.json",
    ),
    "roo-code": (
        ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
        "roo_mcp_settings.json",
    ),
    "opencode": (".config/opencode/opencode.json", "opencode.json"),
    "zed": (".config/zed/settings.json", "zed_settings.json"),
}

Install = Callable[..., Path]
