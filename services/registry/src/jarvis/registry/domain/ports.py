"""What the domain needs from collaborators written elsewhere (client-config manager)."""

from __future__ import annotations

from typing import Protocol


class ClientCascade(Protocol):
    """Removes a server's or profile's entries from every MCP client config Jarvis manages."""

    def remove_server_everywhere(self, server_name: str) -> list[str]:
        """Names of the clients whose config changed."""
        ...

    def remove_profile_everywhere(self, profile_name: str) -> list[str]:
        """Names of the clients whose config changed."""
        ...
