"""The client the official conformance suite's client scenarios judge, when the client under test is Jarvis.

`conformance client --command "python tests/support/conformance_client.py"` starts a scenario's test server and runs
this with its URL as the last argument (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION and, for some
scenarios, MCP_CONFORMANCE_CONTEXT in the environment). The scenario judges the requests Jarvis makes of that server,
so this puts the server in the running Jarvis at JARVIS_CONFORMANCE_URL (a `jarvis up` on loopback, its local user)
behind a one-server, unprefixed, interactive profile (as tests/e2e/test_downstream_conformance.py mirrors a server),
and then acts as an agent on that profile (and uninstalls the server at the end): lists the tools, calls each (with
the scenario's arguments, else arguments its schema asks for), lists and reads resources, lists and gets prompts,
accepts every elicitation with the defaults it offers. A server in `servers.oauth` (the `auth/*` scenarios) asks
for the local user's consent: the URL elicitation a call sends is accepted, its link opened as a browser would, and
the call goes on (Jarvis asks again, for the union of scopes, on a step-up).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import sys
from typing import Any

import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

_LINK = re.compile(r"(http://\S+/oauth/downstream/start\?flow=[\w-]+)")
_VALUES: dict[str, Any] = {"string": "us-west1", "integer": 1, "number": 1, "boolean": True}


def _value(schema: dict[str, Any]) -> Any:
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {}
    if kind == "array":
        return []
    return _VALUES.get(kind if isinstance(kind, str) else "string", "x")


def arguments_for(tool: types.Tool, tools: list[types.Tool], context: dict[str, Any]) -> dict[str, Any]:
    """The scenario's own arguments for `tool` when it names them, else a value for each property its schema names
    (an echo tool that takes a schema gets another tool's, verbatim)."""
    for call in context.get("toolCalls") or []:
        if call.get("name") == tool.name:
            return dict(call.get("arguments") or {})
    properties = tool.input_schema.get("properties") or {}
    if "schema" in properties and (others := [t for t in tools if t.name != tool.name]):
        return {"schema": others[0].input_schema}
    return {name: _value(spec) for name, spec in properties.items() if isinstance(spec, dict)}


async def _accept(_: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Every elicitation accepted: a form with the defaults it offers; Jarvis's consent link opened as the person's
    browser would (the call goes on once it is done); any other URL declined."""
    if isinstance(params, types.ElicitRequestURLParams):
        if not _LINK.fullmatch(params.url):
            return types.ElicitResult(action="decline")
        await asyncio.to_thread(consent, params.url)
        return types.ElicitResult(action="accept")
    properties = params.requested_schema.get("properties") or {}
    return types.ElicitResult(action="accept", content={name: _value(spec) for name, spec in properties.items()})


async def _admin(jarvis: str, method: str, arguments: dict[str, Any]) -> Any:
    async with Client(jarvis + "/mcp/jarvis", mode="legacy") as admin:
        result = await admin.call_tool(method, arguments)
    text = getattr(result.content[0], "text", "") if result.content else ""
    if result.is_error:
        raise RuntimeError(f"{method} {arguments.get('action')}: {text}")
    return json.loads(text) if text else None


async def install(jarvis: str, name: str, url: str, oauth: bool, client: dict[str, Any]) -> None:
    """`url` as server `name` in a one-server profile of the same name, unprefixed and interactive (and in
    servers.oauth before it exists, for a server that asks each person to authorize, with the client the scenario
    registered ahead at its authorization server, if any, in servers.oauth_clients, as an admin would)."""

    async def current(key: str) -> Any:
        return (await _admin(jarvis, "jarvis_config", {"action": "get", "key": key})).get("value")

    async def add_to(key: str) -> None:
        value = [*(await current(key) or []), name]
        await _admin(jarvis, "jarvis_config", {"action": "set", "key": key, "value": value})

    if client.get("client_id"):
        clients = {**(await current("servers.oauth_clients") or {}), name: client}
        await _admin(jarvis, "jarvis_config", {"action": "set", "key": "servers.oauth_clients", "value": clients})
    if oauth:
        await add_to("servers.oauth")
    await _admin(jarvis, "jarvis_server", {"action": "create", "name": name, "type": "streamable-http", "url": url})
    await _admin(jarvis, "jarvis_profile", {"action": "create", "name": name, "servers": [name]})
    for key in ("servers.unprefixed_profiles", "servers.interactive"):
        await add_to(key)


def consent(link: str) -> None:
    """Open a consent link as the local user's browser: Jarvis's link, the authorization server, Jarvis's return."""
    with httpx2.Client(timeout=30, follow_redirects=True) as browser:
        page = browser.get(link)
        print(f"consent: {page.status_code} {page.text[:300]}", file=sys.stderr)


async def _call(agent: Client, tool: types.Tool, arguments: dict[str, Any]) -> str:
    """The call's text (its error's, when it failed); a server's JSON-RPC error is the scenario's business."""
    try:
        result = await agent.call_tool(tool.name, arguments)
    except MCPError as exc:
        return f"error: {exc}"
    text = str(getattr(result.content[0], "text", "")) if result.content else ""
    return f"error: {text}" if result.is_error else text


async def _call_each(agent: Client, context: dict[str, Any]) -> list[str]:
    """Every tool the profile lists, called once; the names it listed."""
    tools = (await agent.list_tools()).tools
    for tool in tools:
        text = await _call(agent, tool, arguments_for(tool, tools, context))
        print(f"call {tool.name}: {text[:300]}", file=sys.stderr)
    return [tool.name for tool in tools]


async def act(profile: str, mode: str, context: dict[str, Any]) -> None:
    async with httpx2.AsyncClient(timeout=60) as http:
        transport = streamable_http_client(profile, http_client=http)
        async with Client(transport, mode=mode, elicitation_callback=_accept) as agent:  # type: ignore[arg-type]
            listed = await _call_each(agent, context)
            # Once the person authorized, a per-person server's profile lists that server's own tools (it listed
            # `connect` before): those are called too.
            if [tool.name for tool in (await agent.list_tools()).tools] != listed:
                await _call_each(agent, context)
            # What else a profile lists is asked for too (a scenario may judge its headers); a server that answers
            # it badly is the scenario's business, not the agent's.
            capabilities = agent.session.server_capabilities
            try:
                if capabilities is not None and capabilities.resources is not None:
                    for resource in (await agent.list_resources()).resources:
                        await agent.read_resource(resource.uri)
                if capabilities is not None and capabilities.prompts is not None:
                    for prompt in (await agent.list_prompts()).prompts:
                        await agent.get_prompt(prompt.name, {})
            except MCPError as exc:
                print(f"resources or prompts: {exc}", file=sys.stderr)


async def main(url: str) -> None:
    jarvis = os.environ["JARVIS_CONFORMANCE_URL"]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "scenario")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    name = re.sub(r"[^a-z0-9]+", "-", scenario.lower()).strip("-")[:40] + "-" + secrets.token_hex(2)
    client = {key: context[key] for key in ("client_id", "client_secret") if key in context}  # auth/pre-registration
    await install(jarvis, name, url, scenario.startswith("auth/"), client)
    mode = version if version.startswith("2026") else "legacy"
    try:
        await act(f"{jarvis}/mcp/profile/{name}", mode, context)
    finally:  # Jarvis lets go of the server (its streams too): the scenario's server can then stop
        await _admin(jarvis, "jarvis_server", {"action": "uninstall", "name": name})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[-1]))
