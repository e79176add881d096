"""The doors a tool call comes in by (decision 0065), and the matrix runner the e2e tests of the call pipeline share.

Doors: the SDK's handler (a 2025-era session), the direct path (a raw 2026-07-28 POST), discovery's `tool_call`, and
a `code_run` program; on a profile, the SDK's door is the profile's. `through_every_door` makes the same calls through
each with a token of its own (so each door's audit records are its own) and returns what each answered and recorded;
the tool-call metric must count each audit record once.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx2
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from prometheus_client.parser import text_string_to_metric_families

from tests.support.downstream import eventually
from tests.support.stack import RunningJarvis, mcp_client, result_json

MODERN = "2026-07-28"
# A consent link of a person's own OAuth server (tests/support/per_person_oauth.py LINK): its flow is each call's own.
_LINK = re.compile(r"http://\S+/oauth/downstream/start\?flow=[\w-]+")
_ids = itertools.count(1)
_tokens = itertools.count(1)


def _nothing(_: str) -> str:
    return ""


@dataclass(frozen=True)
class Backend:
    name: str  # the tool as its own surface names it
    arguments: dict[str, Any]
    surface: str  # the path of its own surface (a Jarvis surface, or the profile holding the server)
    allowed: tuple[str, ...]  # scopes that may call it
    narrow: tuple[str, ...]  # scopes that reach its surface but not it
    # Discovery's name and arguments for it, where they differ (a gateway's sub-tool is a catalog entry of its own).
    catalog: str = ""
    catalog_arguments: Mapping[str, Any] | None = None
    # What of a successful answer every door must give alike ("" for none: a Jarvis tool's JSON is laid out per door).
    answer: Callable[[str], str] = _nothing

    @property
    def found_as(self) -> tuple[str, dict[str, Any]]:
        """The name and arguments `tool_call` and `code_run` call it by."""
        arguments = self.catalog_arguments if self.catalog_arguments is not None else self.arguments
        return self.catalog or self.name, dict(arguments)


# A door: (whether the call was refused, its error text or, allowed, the text it answered).
Door = Callable[[RunningJarvis, str, Backend], Awaitable[tuple[bool, str]]]
# Done for a door's fresh token before its calls (a person's own value, or their consent), with the token's name.
Prepare = Callable[[RunningJarvis, str, str], Awaitable[None]]


def _text(result: Any) -> str:
    return str(getattr(result.content[0], "text", "")) if result.content else ""


async def sdk(jarvis: RunningJarvis, token: str, backend: Backend) -> tuple[bool, str]:
    async with mcp_client(jarvis.url(backend.surface), token) as client:
        result = await client.call_tool(backend.name, backend.arguments)
    return bool(result.is_error), _text(result)


async def direct(jarvis: RunningJarvis, token: str, backend: Backend) -> tuple[bool, str]:
    meta = {
        PROTOCOL_VERSION_META_KEY: MODERN,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: {"name": "t", "version": "1"},
    }
    body = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": backend.name, "arguments": backend.arguments, "_meta": meta},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": backend.name,
        "authorization": f"Bearer {token}",
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = (await http.post(jarvis.url(backend.surface), content=json.dumps(body), headers=headers)).json()
    assert "result" in answer, answer
    result = answer["result"]
    return bool(result.get("isError")), result["content"][0]["text"] if result.get("content") else ""


async def tool_call(jarvis: RunningJarvis, token: str, backend: Backend) -> tuple[bool, str]:
    name, arguments = backend.found_as
    async with mcp_client(jarvis.url("/mcp"), token) as client:
        result = await client.call_tool("tool_call", {"name": name, "arguments": arguments})
    return bool(result.is_error), _text(result)


async def code_run(jarvis: RunningJarvis, token: str, backend: Backend) -> tuple[bool, str]:
    name, arguments = backend.found_as
    program = (
        f"return await tools.{name}({json.dumps(arguments)}).then("
        "(r) => 'ok: ' + (typeof r === 'string' ? r : JSON.stringify(r)), (e) => 'refused: ' + String(e.message));"
    )
    async with mcp_client(jarvis.url("/mcp"), token) as client:
        ran = result_json(await client.call_tool("code_run", {"code": program}))["result"]
    # A refused inner call reads "<tool>: <the refusal>" inside the program.
    if ran.startswith("refused: "):
        return True, ran.removeprefix("refused: ").removeprefix(f"{name}: ")
    return False, ran.removeprefix("ok: ")


DOORS: dict[str, Door] = {"sdk": sdk, "direct": direct, "tool_call": tool_call, "code_run": code_run}
# On a profile, the SDK's handler is the profile's own `call_tool`.
PROFILE_DOORS: dict[str, Door] = {"profile": sdk, "direct": direct, "tool_call": tool_call, "code_run": code_run}


@dataclass(frozen=True)
class Seen:
    """What one door answered to the last of its calls, and the outcomes its audit recorded for them all. The text
    is made comparable across doors: the caller's token name reads `<caller>`, a consent link `<link>`, a rate
    limit's wait `N`; `raw` is the text as it came."""

    refused: bool
    text: str
    outcomes: list[str]
    token: str = field(compare=False)
    raw: str = field(compare=False)

    @property
    def what(self) -> tuple[bool, str, list[str]]:
        return self.refused, self.text, self.outcomes


async def audit_of(jarvis: RunningJarvis, admin: str, token_name: str) -> list[dict[str, Any]]:
    """The audit records of the calls `token_name` made (not its `code_run`s, nor its own `jarvis_server` setup)."""
    async with mcp_client(jarvis.url(), admin) as client:
        entries = result_json(
            await client.call_tool("jarvis_server", {"action": "usage", "audit": True, "query": token_name})
        )["audit"]
    return [e for e in entries if e["tool"] not in ("code_run", "jarvis_server")]


async def catalogued(jarvis: RunningJarvis, admin: str, name: str) -> bool:
    """Whether discovery's catalog holds `name` yet (a gateway's sub-tools, a server's tools learned from a first
    connection), so that `tool_call` and `code_run` reach it."""
    async with mcp_client(jarvis.url("/mcp"), admin) as client:
        return not (await client.call_tool("tool_describe", {"name": name})).is_error


async def counted(jarvis: RunningJarvis, admin: str) -> Counter[str]:
    """`jarvis_mcp_tool_calls_total` by outcome, but for `code_run` (a door: the calls it makes are counted)."""
    async with httpx2.AsyncClient(timeout=30) as http:
        text = (await http.get(jarvis.url("/metrics"), headers={"authorization": f"Bearer {admin}"})).text
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "jarvis_mcp_tool_calls_total" and sample.labels["tool"] != "code_run":
                counts[sample.labels["outcome"]] += int(sample.value)
    return counts


def comparable(text: str, token_name: str) -> str:
    """`text` as every door must say it alike: what depends on the caller or the moment replaced."""
    text = re.sub(r"retry after [0-9.]+ s", "retry after N s", text)
    return _LINK.sub("<link>", text).replace(token_name, "<caller>")


async def through_every_door(
    jarvis: RunningJarvis,
    backend: Backend,
    scopes: tuple[str, ...],
    calls: int,
    doors: Mapping[str, Door] = DOORS,
    prepare: Prepare | None = None,
) -> dict[str, Seen]:
    """Per door: `calls` calls by a fresh token with `scopes` (`prepare`d first), the last one's answer, and the
    outcomes of the audit records they left; the tool-call metric must have counted each record once."""
    admin = jarvis.create_token("admin", name="auditor")
    answers = {}
    for door, run in doors.items():
        name = f"{door}-{next(_tokens)}-caller"  # no name is part of another
        token = jarvis.create_token(*scopes, name=name)
        if prepare is not None:
            await prepare(jarvis, token, name)
        before = await counted(jarvis, admin)
        for _ in range(calls):
            refused, text = await run(jarvis, token, backend)
        increments = sorted((await counted(jarvis, admin) - before).elements())

        async def recorded(name: str = name) -> list[dict[str, Any]] | None:
            found = await audit_of(jarvis, admin, name)
            return found if len(found) >= calls else None

        await eventually(recorded, what=f"the audit records of {door}, which answered {text!r}")
        await asyncio.sleep(2.5)  # one more flush: a second record of the same call would land by now
        records = await audit_of(jarvis, admin, name)
        outcomes = sorted(r["outcome"] for r in records)
        assert increments == outcomes, f"{door}: metrics counted {increments}, the audit recorded {outcomes}"
        shown = comparable(text if refused else backend.answer(text), name)
        answers[door] = Seen(refused, shown, outcomes, token, text)
    return answers


def same_everywhere(answers: Mapping[str, Seen]) -> Seen:
    """The one answer every door gave (the test fails, showing them all, where one differs)."""
    first = next(iter(answers.values()))
    assert all(seen == first for seen in answers.values()), json.dumps(
        {door: asdict(seen) for door, seen in answers.items()}, indent=1
    )
    return first
