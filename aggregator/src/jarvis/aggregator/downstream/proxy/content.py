"""Resource URIs inside a server's content, as a surface that mixes servers shows them.

A `resource_link` or embedded `resource` in a tool result or a prompt message names the server's own URI, which a
client of a prefixed profile can neither read back (the profile routes only `jarvis://<server>/<uri>`) nor tell
apart from the same URI of another server. So on such a profile those URIs get the same namespace as
`resources/list` gives them (naming.py), and `resources/read` of one reaches the server it came from. Everything
else in the content (text, images, the embedded resource's own data) passes untouched; a transparent surface
changes nothing.
"""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.downstream.hosting.naming import namespaced_uri
from jarvis.aggregator.tooling.json_types import JsonObject


def namespaced_block(server: str, block: Any) -> Any:
    """One content block with its resource URI namespaced; any other block as it is."""
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "resource_link" and isinstance(block.get("uri"), str):
        return {**block, "uri": namespaced_uri(server, block["uri"])}
    resource = block.get("resource")
    if kind == "resource" and isinstance(resource, dict) and isinstance(resource.get("uri"), str):
        return {**block, "resource": {**resource, "uri": namespaced_uri(server, resource["uri"])}}
    return block


def namespaced_tool_result(server: str, result: JsonObject) -> JsonObject:
    """A `tools/call` result (or a task's final result) with the URIs of its content namespaced."""
    content = result.get("content")
    if not isinstance(content, list):
        return result
    return {**result, "content": [namespaced_block(server, block) for block in content]}


def namespaced_prompt(server: str, result: JsonObject) -> JsonObject:
    """A `prompts/get` result with the URIs of its messages' content namespaced."""
    messages = result.get("messages")
    if not isinstance(messages, list):
        return result
    return {
        **result,
        "messages": [
            {**message, "content": namespaced_block(server, message.get("content"))}
            if isinstance(message, dict)
            else message
            for message in messages
        ],
    }


def namespaced_task(server: str, task: JsonObject) -> JsonObject:
    """A task's state (`tasks/get`, `notifications/tasks`) with the URIs of its final result's content namespaced."""
    result = task.get("result")
    return {**task, "result": namespaced_tool_result(server, result)} if isinstance(result, dict) else task
