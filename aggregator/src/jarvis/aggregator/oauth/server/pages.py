"""The consent page: plain HTML with one form posted back (no JavaScript), naming the client, the person and
what the client would get."""

from __future__ import annotations

import html
from collections.abc import Sequence

from starlette.responses import HTMLResponse

from jarvis.aggregator.oauth.server.errors import PAGE_HEADERS, page
from jarvis.aggregator.oauth.upstream import Identity


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
            f"<p>Signed in as <strong>{who}</strong>, but no Jarvis role grants you any of what "
            f"<strong>{client}</strong> asks for. Ask an admin to give one of your groups a role "
            "(<code>jarvis role set</code>).</p>"
        )
        buttons = "<button type=submit name=decision value=deny>Back to the client</button>"
    form = (
        "<form method=post action='/oauth/consent'>"
        f"<input type=hidden name=consent value='{html.escape(consent_id)}'>"
        f"<input type=hidden name=csrf value='{html.escape(csrf)}'>{buttons}</form>"
    )
    return HTMLResponse(page("Allow access to Jarvis?", body + form), headers=PAGE_HEADERS)
