"""Each person's own authorization at downstream servers (issue 32): Jarvis as an MCP authorization-spec client.

`person.py` names the person a call is for; `storage.py` keeps their grant in the registry's vault; `provider.py`
is the MCP SDK's OAuth client, bound to one person and server; `consent.py` runs the consent a person gives in
their browser (the link, `/oauth/downstream/callback`); `personal.py` keeps a connection per person.
"""
