"""The admin's Profiles page (issue 49): each profile, the named set of servers served together at its own MCP path,
with its members. It is `jarvis_profile action=list` called as the admin; a server's name opens its details on the
Servers page.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from jarvis.aggregator.console.web import PATH, ConsoleBase
from jarvis.common.surfaces import PROFILE_PATH_PREFIX

PROFILES = f"{PATH}/admin/profiles"


class ProfilePages(ConsoleBase):
    def profile_routes(self) -> list[Route]:
        return [Route(PROFILES, self.profiles_page, methods=["GET"])]

    async def profiles_page(self, request: Request) -> Response:
        who = await self._who(request, admin=True)
        if isinstance(who, Response):
            return who
        listed = await self._ask(who[1], "jarvis_profile", {"action": "list"})
        values = {
            "profiles": listed.payload.get("profiles", []) if listed.ok else [],
            "error": listed.error,
            "base": await self.base_url() + PROFILE_PATH_PREFIX,
        }
        return self._page(request, "profiles.html", values, status=200 if listed.ok else 400, who=who)
