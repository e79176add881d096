"""The consent page: plain HTML with one form posted back (no JavaScript), naming the client, the person and
what the client would get; or, when no role grants the person any of it, what happened and what an admin runs."""

from __future__ import annotations

import html
from collections.abc import Sequence

from starlette.responses import HTMLResponse

from jarvis.aggregator.oauth.server.errors import PAGE_HEADERS, page
from jarvis.aggregator.oauth.upstream import Identity

# What an admin runs so a group gets a role (the page names it; the person passes it on).
ROLE_COMMAND = "jarvis role set <name> --group <group> --scope <scope>"


def no_role(person: Identity, client_name: str) -> str:
    """What the person is told, on the page and through the client's `access_denied`, when no role grants any of what
    the client asks for: who they signed in as and with which groups, since a role must name one of those."""
    who = person.name or person.email or person.subject
    groups = ", ".join(person.groups) or "none"
    return f"Signed in as {who} (groups: {groups}); no Jarvis role grants what {client_name} asks for"


def no_role_description(person: Identity, client_name: str) -> str:
    """The client's error_description: the page's sentence, and the command, for clients that show only this."""
    return f"{no_role(person, client_name)}; an admin can grant it with `{ROLE_COMMAND}`"


def consent(
    client_name: str,
    client_id: str,
    person: Identity,
    granted: Sequence[str],
    resource: str,
    consent_id: str,
    csrf: str,
) -> HTMLResponse:
    who = html.escape(person.name or person.email or person.subject)
    client = html.escape(client_name)
    if granted:
        scopes = "".join(f"<li><code>{html.escape(s)}</code></li>" for s in granted)
        body = (
            f"<p>Signed in as <strong>{who}</strong>.</p>"
            f"<p><strong>{client}</strong> (<code>{html.escape(client_id)}</code>) asks to use Jarvis at "
            f"<code>{html.escape(resource)}</code> as you, with these scopes:</p><ul>{scopes}</ul>"
        )
        buttons = (
            "<button type=submit name=decision value=allow>Allow</button> "
            "<button type=submit name=decision value=deny>Deny</button>"
        )
    else:
        body = (
            f"<p>{html.escape(no_role(person, client_name))}.</p>"
            "<p>Ask an admin to give one of your groups a role that grants it: "
            f"<code>{html.escape(ROLE_COMMAND)}</code>.</p>"
        )
        # Not a refusal by the person: the consent post answers the client `access_denied` saying the above.
        buttons = "<button type=submit name=decision value=back>Back to the client</button>"
    form = (
        "<form method=post action='/oauth/consent'>"
        f"<input type=hidden name=consent value='{html.escape(consent_id)}'>"
        f"<input type=hidden name=csrf value='{html.escape(csrf)}'>{buttons}</form>"
    )
    title = "Allow access to Jarvis?" if granted else "No Jarvis role for this client"
    return HTMLResponse(page(title, body + form), headers=PAGE_HEADERS)
