"""The profile and share surfaces: MCP servers whose tools, resources, prompts and tasks are downstream
servers', proxied."""
