"""Helpers shared by the test suites: real processes, free ports, MCP clients."""
