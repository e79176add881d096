"""Downstream MCP servers: run or reach the servers the registry installs, and proxy their tools."""
