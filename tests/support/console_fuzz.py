"""A bounded fuzz of the console's forms and pages (issue 49): every form posted with malformed, missing, oversized
and mistyped fields, with the session's CSRF token, an empty one and a wrong one; raw and mistyped bodies; every page
opened with odd paths and queries. Shared by tests/e2e/test_console.py and bench/fuzz_endpoints.py; the answers that
are 5xx go in the same `Report` as the MCP endpoints' fuzz.

The client is signed in already (the console's cookie); fields never name a real server, role, person or schedule,
so fuzzing a local admin's console changes nothing.
"""

from __future__ import annotations

import httpx2

from tests.support.fuzz import Report

FORM = "application/x-www-form-urlencoded"

GARBAGE: list[dict[str, str]] = [
    {},
    {"server": ""},
    {"server": "x" * 5000},
    {"server": "../../etc/passwd", "name": "\u0000"},
    {"scope": "not a scope!", "name": "n", "expires_in": "-5"},
    {"scope": "jarvis", "name": "n", "expires_in": "abc"},
    {"scope": "admin@p1", "name": "y" * 300, "expires_in": "99999999999999999999"},
    {"id": "nope"},
    {"key:TOY_NAME": "line\nbreak", "server": "keyed"},
    {"key:NOT_A_KEY": "v", "server": "keyed"},
    {"key:TOY_NAME": "v" * 20000, "server": "keyed"},
    {"project_id": "../x", "session_id": "s" * 5000},
    {"project_id": "p0123456789ab", "session_id": "\u0000"},
    {"name": "r", "groups": ",,, ,", "scopes": "admin:user nope@"},
    {"name": "r" * 500, "users": "\u0000", "scopes": ""},
    {"who": "x" * 5000},
    {"schedule_id": "sch_000000000000"},
    {"schedule_id": "s" * 5000, "enabled": "maybe"},
    {"schedule_id": "\u0000"},
    {"name": "no-such-server", "tool": "\u0000"},
    {"name": "no-such-server", "tool": "t" * 5000},
    {
        "name": "no-such-server",
        "env:TOY_NAME": "v",
        "unset_env": "TOY_NAME",
        "new_env_name": "\u0000",
        "header:X-Key": "v",
        "unset_header": "X",
    },
    {"name": "no-such-server", "env:": "v" * 20000, "new_env_name": "n" * 5000, "new_env_value": "line\nbreak"},
    {"name": "no-such-server", "new_header_name": "Bad Header\r\nX", "new_header_value": "v\r\nInjected: 1"},
    {"surface": "/mcp/profile/../jarvis"},
    {"project_id": "p0123456789ab", "prompt": "x" * 30000},
    {"surface": "\u0000" * 300},
]
FORMS = (
    "/console/tokens",
    "/console/tokens/revoke",
    "/console/accounts/connect",
    "/console/accounts/disconnect",
    "/console/accounts/keys",
    "/console/sessions/end",
    "/console/sessions/start",
    "/console/schedules/enable",
    "/console/schedules/disable",
    "/console/schedules/trigger",
    "/console/admin/people/roles",
    "/console/admin/people/roles/delete",
    "/console/admin/people/disable",
    "/console/admin/people/enable",
    "/console/admin/servers/restart",
    "/console/admin/servers/approve",
    "/console/admin/servers/reject",
    "/console/admin/servers/install",
    "/console/admin/servers/edit",
    "/console/admin/servers/headers",
    "/console/connect/token",
)
PAGES = (
    "/console/?token=",
    "/console/?token=" + "a" * 5000,
    "/console/?token=%00",
    "/console/?x=1",
    "/console/signin",
    "/console/static/console.css",
    "/console/nope",
    "/console/schedules",
    "/console/sessions",
    "/console/sessions/p0/s0",
    "/console/sessions/%00/x/events?after=-1",
    "/console/admin/people",
    "/console/admin/profiles",
    "/console/admin/usage",
    "/console/admin/health",
    "/console/admin/servers?server=%00&q=" + "q" * 3000,
    "/console/admin/audit?before_id=99999999999999999999999&since=yesterday&outcome=%00",
    "/console/admin/audit.csv?until=2026-13-45T99:99",
)
# The live pages' server-sent events: each opened with odd queries and Last-Event-IDs, its status read, then closed
# (a stream that opens goes on until the client leaves).
STREAMS = (
    ("/console/admin/servers/events?after=%00", "%00"),
    ("/console/admin/servers/events?after=" + "a" * 5000, "x" * 5000),
    ("/console/admin/audit/events?since=yesterday&after=-1", ""),
    ("/console/admin/audit/events?after=99999999999999999999999", "99999999999999999999999"),
    ("/console/admin/audit/events?outcome=%00&who=" + "w" * 5000, "-5"),
    ("/console/admin/audit/events?before_id=1&until=2026-13-45T99:99", "abc"),
)


def csrf_of(client: httpx2.Client) -> str:
    """The signed-in session's CSRF token, from a page's form."""
    return client.get("/console/tokens").text.split('name="csrf" value="')[1].split('"')[0]


def fuzz_console(client: httpx2.Client, origin: str, report: Report | None = None) -> Report:
    """Every form and page of the console through `client` (signed in, its base URL Jarvis's); `origin` is the
    Origin a browser on Jarvis's own pages sends."""
    report = report or Report()
    csrf = csrf_of(client)

    def count(what: str, answer: httpx2.Response) -> None:
        report.requests += 1
        report.statuses[answer.status_code] += 1
        if answer.status_code >= 500:
            report.server_errors.append(f"{what}: {answer.status_code} {answer.text[:200]}")

    for path in FORMS:
        for fields in GARBAGE:
            for token in (csrf, "", "wrong"):
                count(f"POST {path}", client.post(path, data={**fields, "csrf": token}, headers={"origin": origin}))
        raw = b"\xff\xfe=%%%&&=="
        count(f"POST {path} raw", client.post(path, content=raw, headers={"content-type": FORM, "origin": origin}))
        typed = {"content-type": "application/json", "origin": origin}
        count(f"POST {path} json", client.post(path, content=b"{}", headers=typed))
    for path in PAGES:
        count(f"GET {path}", client.get(path))
    for path, last in STREAMS:
        with client.stream("GET", path, headers={"last-event-id": last}) as streamed:
            if streamed.status_code >= 500:
                streamed.read()
            count(f"GET {path} (stream)", streamed)
    return report
