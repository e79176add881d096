"""MCP surfaces: named endpoints with curated tool sets."""
