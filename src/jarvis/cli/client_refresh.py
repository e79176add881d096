"""The line `jarvis up` prints when it requires a credential and entries Jarvis wrote into client configs carry none
(issue 48 item 4). They were written while it ran open, and each client now fails in its own words (Claude Code:
"Dynamic Client Registration rejected (HTTP 404)", Gemini CLI: "Disconnected", OpenCode: "needs authentication");
`jarvis client edit` with the same names writes them again, each with what this Jarvis accepts."""

from __future__ import annotations

import logging
import shlex
from collections.abc import Sequence

from jarvis.cli.settings import EmbeddedSettings
from jarvis.common.errors import JarvisError
from jarvis.registry.domain.clients import ClientManager, Refresh

log = logging.getLogger(__name__)


def client_refreshes(settings: EmbeddedSettings, sign_in: bool) -> list[Refresh]:
    """The entries without a credential in the client configs the registry of `settings` manages; with `sign_in`
    (this Jarvis serves it) a client that signs in needs none. Nothing when they cannot be read: the banner stays."""
    registry = settings.registry_settings()
    try:
        return ClientManager(registry.data_dir, registry.home, "").refreshes(sign_in)
    except (JarvisError, OSError) as exc:
        log.warning("cannot check the client entries Jarvis wrote: %s", exc)
        return []


def refresh_line(refreshes: Sequence[Refresh], command: str = "jarvis") -> str:
    """One line naming each client to refresh with the command that does it ("" when none); `command` runs this
    Jarvis's CLI (banner.invocation)."""
    if not refreshes:
        return ""
    return (
        "Client entries Jarvis wrote without a token are refused now that it requires one; refresh them: "
        + "; ".join(edit_command(refresh, command) for refresh in refreshes)
    )


def edit_command(refresh: Refresh, command: str = "jarvis") -> str:
    words = [command, "client", "edit", shlex.quote(refresh.client)]
    for name in refresh.adds:
        words += ["--add", shlex.quote(name)]
    if refresh.path is not None:
        words += ["--path", shlex.quote(refresh.path)]
    return " ".join(words)
