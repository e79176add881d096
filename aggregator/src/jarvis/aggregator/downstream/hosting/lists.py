"""Which of a surface's lists (tools, prompts, resources) a change may have touched.

A server's own `notifications/<kind>/list_changed` touches one list; a server installed, removed, re-launched or
moved in or out of a profile may touch all three, as what it serves joins or leaves the surfaces it is on.
"""

from __future__ import annotations

TOOLS, PROMPTS, RESOURCES = "tools", "prompts", "resources"
Lists = frozenset[str]
ONLY_TOOLS: Lists = frozenset({TOOLS})
EVERY_LIST: Lists = frozenset({TOOLS, PROMPTS, RESOURCES})
# The notification a server sends when one of its lists changed, and which list it names.
CHANGE_NOTICES = {f"notifications/{kind}/list_changed": kind for kind in (TOOLS, PROMPTS, RESOURCES)}
