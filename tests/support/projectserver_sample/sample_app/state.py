"""Registered state singletons and plain module globals."""

from __future__ import annotations

import os
from collections import defaultdict

from project_mcp_server.registry import register

SENTINEL = {"value": 42, "nested": {"deep": {"deeper": {"deepest": [1, 2, 3]}}}}
CACHE = {"users": {"alice": {"id": 1, "roles": ["admin"]}, "bob": {"id": 2, "roles": []}}, 7: "seven"}
LAZY: defaultdict[str, list[int]] = defaultdict(list)  # a read by key would insert


class Settings:
    """A settings object with a slot-free instance dict and a class constant."""

    TIMEOUT = 30

    def __init__(self) -> None:
        self.debug = True
        self.name = "sample"


SETTINGS = Settings()
# What inspect_state must never show: credentials by name, and a copy of the environment.
SERVICE = {"region": "eu", "api_key": "sk-canary-1", "nested": {"db_password": "pw-canary-2"}}
ENV_COPY = dict(os.environ)
ENVIRON = os.environ  # the live mapping under another name
register("cache", CACHE)
register("settings", SETTINGS)
register("lazy", LAZY)
register("service", SERVICE)
