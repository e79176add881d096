"""The project's MCP server: introspection tools for agents (state, tests, database, traces, logs)."""

from project_mcp_server.schemas import SERVER_NAME, SERVER_VERSION

__version__ = SERVER_VERSION
__all__ = ["SERVER_NAME", "SERVER_VERSION", "__version__"]
