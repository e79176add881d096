"""`python -m project_mcp_server --root PROJECT`: serve the project's tools over stdio.

Start-up order matters: the state modules are imported and the application thread started
before the server answers `initialize`, so a client that completed the handshake can inspect
state at once. The application starts once the SDK has claimed stdout for the protocol (from
then on a stray print goes to stderr). The server logs to stderr only: the application's log
file is the application's, and get_logs must never find the server's lines there.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import threading
from pathlib import Path

import anyio
from mcp.server.stdio import stdio_server

from project_mcp_server.config import ServerConfig, load_config
from project_mcp_server.server import build_server

log = logging.getLogger("project_mcp_server")


def _import_state(config: ServerConfig) -> None:
    for entry in reversed(config.python_path):
        if str(entry) not in sys.path:
            sys.path.insert(0, str(entry))
    for name in config.state_modules:
        importlib.import_module(name)


def _start_application(config: ServerConfig) -> None:
    if config.app:
        module_name, _, function = config.app.partition(":")
        target = getattr(importlib.import_module(module_name), function or "main")
        threading.Thread(target=target, name="app", daemon=True).start()
        log.info("started the application %s in thread 'app'", config.app)


async def _serve(config: ServerConfig) -> None:
    server = build_server(config)
    async with stdio_server() as (read_stream, write_stream):
        _start_application(config)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, load the application, serve until stdin closes."""
    parser = argparse.ArgumentParser(prog="project_mcp_server", description=__doc__)
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(os.environ.get("PROJECT_MCP_ROOT", ".")),
        help="the project directory (default: $PROJECT_MCP_ROOT or the current directory)",
    )
    parser.add_argument(
        "--config", type=Path, default=None, help="configuration file (default: ROOT/mcp-server/project-server.toml)"
    )
    parser.add_argument("--log-level", default=os.environ.get("PROJECT_MCP_LOG_LEVEL", "INFO"))
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = load_config(args.root, args.config)
    _import_state(config)
    log.info("serving %s on stdio", config.root)
    anyio.run(_serve, config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
