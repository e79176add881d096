"""A bounded fuzz of a running aggregator's MCP endpoints over real HTTP; counts the answers that are 5xx.

Cases: malformed and truncated JSON, JSON-RPC of the wrong shape, deep nesting, huge strings, bad
UTF-8, batches, wrong methods and content types, unknown and overlong session ids, and byte-level
mutations of valid requests. Every case goes to every surface given, both with and without an
initialized session. tools/call cases never name a real action with valid arguments, so fuzzing a
loopback Jarvis (where the caller is the local admin) changes nothing.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field

import httpx2

MCP_ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}},
}


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    method: str = "POST"
    content_type: str | None = "application/json"
    accept: str | None = MCP_ACCEPT
    session: str | None = None  # "live": the surface's initialized session; else this literal id


@dataclass
class Report:
    requests: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)  # "<surface> <case>: <status> <body>"

    def line(self) -> str:
        shown = ", ".join(f"{status}: {count}" for status, count in sorted(self.statuses.items()))
        return f"{self.requests} requests, {len(self.server_errors)} answered 5xx ({shown})"


def _dumps(value: object) -> bytes:
    return json.dumps(value).encode()


def _call(name: object, arguments: object, request_id: object = 7) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def fixed_cases() -> list[Case]:
    """The hand-written corpus: every kind of bad input the issue lists, once."""
    deep = [("array", b"[" * n + b"]" * n) for n in (65, 1000, 100_000)]
    deep += [("object", b'{"a":' * n + b"1" + b"}" * n) for n in (65, 1000, 50_000)]
    deep += [
        ("params", b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + b"[" * 500 + b"]" * 500 + b"}"),
        ("unclosed", b"[" * 200_000),
    ]
    bodies: list[tuple[str, bytes]] = [(f"deep-{kind}-{len(body)}", body) for kind, body in deep]
    bodies += [
        ("empty", b""),
        ("null", b"null"),
        ("number", b"1"),
        ("string", b'"x"'),
        ("true", b"true"),
        ("truncated", _dumps(INITIALIZE)[:40]),
        ("trailing", _dumps(INITIALIZE) + b"}}"),
        ("nan", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}'),
        ("infinity", b'{"id":Infinity}'),
        ("bad-utf8", b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe\xc3"}}'),
        ("bad-utf8-key", b'{"\xc3\x28":1}'),
        ("bom", b"\xef\xbb\xbf" + _dumps(INITIALIZE)),
        ("lone-surrogate", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800"}}'),
        ("nul-bytes", b'{"jsonrpc":"2.0","id":1,"method":"ping\x00"}'),
        ("huge-string", _dumps(_call("jarvis_config", {"action": "get", "key": "x" * 900_000}))),
        ("huge-method", _dumps({"jsonrpc": "2.0", "id": 1, "method": "m" * 500_000})),
        ("huge-id", _dumps({"jsonrpc": "2.0", "id": "i" * 500_000, "method": "ping"})),
        ("huge-number", b'{"jsonrpc":"2.0","id":' + b"9" * 100_000 + b',"method":"ping"}'),
        ("many-keys", _dumps({f"k{i}": i for i in range(40_000)})),
        ("id-object", _dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"})),
        ("id-float", _dumps({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})),
        ("method-number", _dumps({"jsonrpc": "2.0", "id": 1, "method": 5})),
        ("no-jsonrpc", _dumps({"id": 1, "method": "ping"})),
        ("jsonrpc-1", _dumps({"jsonrpc": "1.0", "id": 1})),
        ("params-string", _dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "x"})),
        ("call-name-number", _dumps(_call(5, {}))),
        ("call-args-list", _dumps(_call("jarvis_server", [1, 2]))),
        ("call-unknown-tool", _dumps(_call("no_such_tool" * 20, {}))),
        ("call-bad-action", _dumps(_call("jarvis_server", {"action": 5}))),
        ("call-unknown-action", _dumps(_call("jarvis_config", {"action": "\u202e" * 100}))),
        ("call-extra-args", _dumps(_call("jarvis_server", {"action": "nope", "x": [[[]]]}))),
        ("result-no-request", _dumps({"jsonrpc": "2.0", "id": 99, "result": {}})),
        ("error-no-request", _dumps({"jsonrpc": "2.0", "id": 99, "error": {"code": "x"}})),
        ("init-bad-version", _dumps({**INITIALIZE, "params": {"protocolVersion": 7, "capabilities": []}})),
        ("init-no-params", _dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize"})),
        ("batch-empty", b"[]"),
        ("batch-one", _dumps([INITIALIZE])),
        ("batch-mixed", _dumps([INITIALIZE, 1, "x", None, {"jsonrpc": "2.0", "method": "ping"}])),
        ("batch-many", _dumps([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(5_000)])),
        ("batch-calls", _dumps([_call("jarvis_server", {"action": 1}, i) for i in range(200)])),
        ("batch-nested", _dumps([[INITIALIZE]])),
    ]
    cases = [Case(name, body) for name, body in bodies]
    ping = _dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    cases += [
        Case("text-plain", ping, content_type="text/plain"),
        Case("no-content-type", ping, content_type=None),
        Case("form", b"a=1&b=2", content_type="application/x-www-form-urlencoded"),
        Case("multipart", b"--x\r\n\r\n--x--", content_type="multipart/form-data; boundary=x"),
        Case("json-charset", ping, content_type="application/json; charset=latin-1"),
        Case("no-accept", ping, accept=None),
        Case("accept-html", ping, accept="text/html"),
        Case("put", ping, method="PUT"),
        Case("patch", ping, method="PATCH"),
        Case("get", b"", method="GET", accept="text/event-stream"),
        Case("delete-unknown", b"", method="DELETE", session="0" * 32),
        Case("unknown-session", ping, session="f" * 32),
        Case("long-session", ping, session="s" * 4_000),
        Case("odd-session", ping, session="../../etc/passwd"),
    ]
    return cases


def mutated_cases(count: int, seed: int) -> list[Case]:
    """Byte-level mutations of valid requests: deletions, insertions, duplications, flips."""
    rng = random.Random(seed)
    valid = [
        _dumps(INITIALIZE),
        _dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        _dumps(_call("jarvis_server", {"action": "nope", "name": "x"})),
        _dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    alphabet = b'{}[]",:\\0123456789-.eE ntrufalsx\xff\x00\xc3'
    cases = []
    for i in range(count):
        body = bytearray(rng.choice(valid))
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(body) + 1)
            kind = rng.randrange(4)
            if kind == 0 and body:
                del body[at : at + rng.randint(1, 8)]
            elif kind == 1:
                body[at:at] = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
            elif kind == 2 and body:
                start = rng.randrange(len(body))
                body[at:at] = body[start : start + rng.randint(1, 40)] * rng.randint(1, 50)
            elif body:
                body[min(at, len(body) - 1)] ^= 1 << rng.randrange(8)
        cases.append(Case(f"mutation-{i}", bytes(body), session="live" if i % 2 else None))
    return cases


def _open_session(client: httpx2.Client, url: str, headers: dict[str, str]) -> str | None:
    opened = client.post(
        url, content=_dumps(INITIALIZE), headers={**headers, "Content-Type": "application/json", "Accept": MCP_ACCEPT}
    )
    session = opened.headers.get("mcp-session-id")
    if session:
        client.post(
            url,
            content=_dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            headers={
                **headers,
                "Content-Type": "application/json",
                "Accept": MCP_ACCEPT,
                "mcp-session-id": session,
                "mcp-protocol-version": PROTOCOL,
            },
        )
    return session


def fuzz(base_url: str, surfaces: dict[str, str | None], cases: list[Case], report: Report | None = None) -> Report:
    """Send every case to every surface (path → bearer token or None); the live-session cases reuse one session."""
    report = report or Report()
    with httpx2.Client(timeout=60) as client:
        for path, token in surfaces.items():
            auth = {"Authorization": f"Bearer {token}"} if token else {}
            url = base_url + path.partition("?")[0]  # a "?label" only tells two entries for one path apart
            live = _open_session(client, url, auth)
            for case in cases:
                for session in [case.session] if case.session != "live" else [live]:
                    headers = dict(auth)
                    if case.content_type:
                        headers["Content-Type"] = case.content_type
                    if case.accept:
                        headers["Accept"] = case.accept
                    if session:
                        headers["mcp-session-id"] = session
                        headers["mcp-protocol-version"] = PROTOCOL
                    try:
                        if case.method == "GET":
                            with client.stream("GET", url, headers=headers, timeout=2) as streamed:
                                status, text = streamed.status_code, ""
                        else:
                            answer = client.request(case.method, url, content=case.body, headers=headers)
                            status, text = answer.status_code, answer.text
                    except httpx2.ReadTimeout:
                        status, text = 200, ""  # an open SSE stream: the server is fine, it is streaming
                    report.requests += 1
                    report.statuses[status] += 1
                    if status >= 500:
                        report.server_errors.append(f"{path} {case.name}: {status} {text[:200]}")
            if live:
                client.delete(url, headers={**auth, "mcp-session-id": live, "mcp-protocol-version": PROTOCOL})
    return report


async def downstream_surfaces(jarvis_url: str, base_url: str, token: str | None = None) -> dict[str, str | None]:
    """Give a running Jarvis a toy server, a profile and a share of it; their paths → the token each takes."""
    from tests.support.downstream import create_profile, create_toy
    from tests.support.stack import mcp_client, result_json

    async with mcp_client(jarvis_url, token) as admin:
        await create_toy(admin, "fuzztoy")
        await create_profile(admin, "fuzzing", "fuzztoy")
        shared = result_json(await admin.call_tool("jarvis_share", {"action": "start", "name": "fuzztoy"}))["started"]
    return {
        "/mcp/profile/fuzzing": token,
        "/share/fuzztoy/mcp": str(shared["token"]),
        "/share/fuzztoy/mcp?no-token": None,
    }
