"""Puts the console together from the aggregator's parts (the composition root calls this once)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from jarvis.aggregator.console.calls import ToolCalls
from jarvis.aggregator.console.pages import Console
from jarvis.aggregator.console.sessions import Sessions
from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.gateways.oauth_state import OAuthStateGateway
from jarvis.aggregator.mcp_server import Binding
from jarvis.aggregator.oauth.server.browser import BrowserSignIn
from jarvis.aggregator.settings import AggregatorSettings, is_loopback
from jarvis.aggregator.tooling.tool import Surface
from jarvis.common.surfaces import PROFILE_PATH_PREFIX


def build_console(
    settings: AggregatorSettings,
    records: OAuthStateGateway,
    binding: Binding,
    surfaces: Sequence[Surface],
    base_url: Callable[[], Awaitable[str]],
    sign_in: BrowserSignIn | None,
    downstream: DownstreamHost,
    surface_at: Callable[[str], str | None],
) -> Console:
    """`records`: the registry's sign-in records, which keep the console's sessions for every worker and replica;
    `sign_in`: the team's provider (None without sign-in); `surface_at`: the gate's surface for a path."""

    def paths() -> list[str]:
        return [s.path for s in surfaces] + [PROFILE_PATH_PREFIX + name for name in sorted(downstream.profiles)]

    return Console(
        Sessions(records),
        ToolCalls(surfaces, binding),
        base_url,
        settings.host_patterns()[1],
        sign_in,
        downstream.personal,
        paths,
        surface_at,
        tokens_required=settings.auth_required,
        # The local admin's link, only where Jarvis listens on loopback (a log shipped elsewhere must not carry an
        # admin's way in), and from one worker of several.
        announce=settings.worker_slot == 0 and is_loopback(settings.host),
    )
