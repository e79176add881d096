"""The HTTP gate in front of every MCP surface: who is calling (tokens), what they may reach and call, and how often.

gate.py runs a request through checks.py's pipeline, in order: Host/Origin (DNS rebinding) → body size → JSON
nesting → token → surface scope → session ownership → open sessions per token → tool/action scope (tools/call) →
rate limits. A transport-level failure is answered 421/413/400/401/403/429 before the MCP layer sees the request;
a tools/call the token may not make (or not now) is answered as a tool execution error the agent can read, and
never reaches the MCP layer either.
"""
