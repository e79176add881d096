"""The wire to downstream servers: streamable HTTP, stdio pipes, container streams, and the MCP session over them."""
