"""The orchestrator's `project create` tells the runtime which token owns the project, and whether the runtime's
per-token caps apply to it (issue 34 #8): they do for every token but an admin's and the local user."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from jarvis.aggregator.context import ToolContext
from jarvis.aggregator.surfaces.orchestrator.project import Create, ProjectActions
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN, principal_from_token


class _Runtime:
    def __init__(self) -> None:
        self.asked: dict[str, Any] = {}

    async def create_project(self, name: str, **fields: Any) -> str:
        self.asked = {"name": name, **fields}
        return name


@pytest.mark.parametrize(
    ("principal", "created_by", "uncapped"),
    [
        (principal_from_token("tok-1", "agent", ["orchestrator"]), "tok-1", False),
        (principal_from_token("tok-2", "ops", ["admin"]), "tok-2", True),
        (LOCAL_ADMIN, "", True),
    ],
)
def test_project_create_names_its_owner_and_whether_caps_apply(principal: Any, created_by: str, uncapped: bool) -> None:
    fake = _Runtime()
    actions = ProjectActions(cast(ToolContext, SimpleNamespace(runtime=fake)))
    asyncio.run(actions.create(Create(name="p"), principal))
    assert fake.asked["created_by"] == created_by
    assert fake.asked["uncapped"] is uncapped
