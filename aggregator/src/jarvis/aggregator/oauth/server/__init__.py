"""Jarvis's OAuth 2.1 authorization server for MCP clients, federating the person's login to the team's OpenID
provider (issue 31 item 2). Off unless JARVIS_OIDC_ISSUER is set: then nothing of it is served."""
