"""OAuth 2.1 for people: Jarvis as a protected resource (keys, access tokens, resource metadata) and, in server/,
the authorization server that signs them in through the team's OpenID provider (issue 31)."""
