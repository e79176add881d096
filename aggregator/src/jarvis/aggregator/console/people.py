"""The admin's People page: who has signed in (disable or enable them) and the roles that give them scopes (set or
delete one). Each form is the admin surface's `user` or `role` call as the admin (decision 0069), so a role set here
is the record `jarvis role set` writes, and shows on the person's next page: their scopes are read on every request.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from jarvis.aggregator.console.web import PATH, Act, ConsoleBase, field
from jarvis.aggregator.tooling.principal import Principal

PEOPLE = f"{PATH}/admin/people"
_SEPARATORS = re.compile(r"[\s,]+")


def words(form: FormData, name: str) -> list[str]:
    """A field of several values, separated by spaces or commas as a person types them."""
    return [word for word in _SEPARATORS.split(field(form, name)) if word]


def _role_set(form: FormData) -> dict[str, Any]:
    return {
        "action": "set",
        "name": field(form, "name").strip(),
        "groups": words(form, "groups"),
        "users": words(form, "users"),
        "scopes": words(form, "scopes"),
    }


SET_ROLE = Act("role", _role_set, lambda _, form: f"Role {field(form, 'name').strip()} set.")
DELETE_ROLE = Act(
    "role",
    lambda form: {"action": "delete", "name": field(form, "name")},
    lambda _, f: f"Role {field(f, 'name')} deleted.",
)
DISABLE = Act(
    "user",
    lambda form: {"action": "disable", "who": field(form, "who")},
    lambda _, form: f"{field(form, 'who')} is disabled: their sessions and tokens stop working.",
)
ENABLE = Act(
    "user",
    lambda form: {"action": "enable", "who": field(form, "who")},
    lambda _, form: f"{field(form, 'who')} is enabled again.",
)


class PeoplePages(ConsoleBase):
    def people_routes(self) -> list[Route]:
        return [
            Route(PEOPLE, self.people_page, methods=["GET"]),
            Route(f"{PEOPLE}/roles", self.set_role, methods=["POST"]),
            Route(f"{PEOPLE}/roles/delete", self.delete_role, methods=["POST"]),
            Route(f"{PEOPLE}/disable", self.disable, methods=["POST"]),
            Route(f"{PEOPLE}/enable", self.enable, methods=["POST"]),
        ]

    async def _people(self, principal: Principal, note: str = "") -> dict[str, Any]:
        users = await self.calls.call(principal, "user", {"action": "list"})
        roles = await self.calls.call(principal, "role", {"action": "list"})
        return {
            "users": users.payload.get("users", []) if users.ok else [],
            "roles": roles.payload.get("roles", []) if roles.ok else [],
            "error": users.error or roles.error,
            "note": note,
        }

    async def people_page(self, request: Request) -> Response:
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        return self._page(request, "people.html", await self._people(who[1]), who=who)

    async def set_role(self, request: Request) -> Response:
        return await self._act(request, SET_ROLE, self._people, "people.html", admin=True)

    async def delete_role(self, request: Request) -> Response:
        return await self._act(request, DELETE_ROLE, self._people, "people.html", admin=True)

    async def disable(self, request: Request) -> Response:
        return await self._act(request, DISABLE, self._people, "people.html", admin=True)

    async def enable(self, request: Request) -> Response:
        return await self._act(request, ENABLE, self._people, "people.html", admin=True)
