"""MCP client applications (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf) and their config files."""

from .entries import SURFACES, JarvisEntry
from .formats import CLIENTS, ClientFormat
from .manager import ClientManager
from .models import (
    ClientStatus,
    ConfigEntry,
    EditResult,
    EntryKind,
    ImportResult,
    PathInfo,
    Refresh,
    ServerLaunch,
    SkippedEntry,
    Transport,
)

__all__ = [
    "CLIENTS",
    "SURFACES",
    "ClientFormat",
    "ClientManager",
    "ClientStatus",
    "ConfigEntry",
    "EditResult",
    "EntryKind",
    "ImportResult",
    "JarvisEntry",
    "PathInfo",
    "Refresh",
    "ServerLaunch",
    "SkippedEntry",
    "Transport",
]
