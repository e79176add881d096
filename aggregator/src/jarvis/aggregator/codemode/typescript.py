"""TypeScript declarations of tools from their JSON Schemas, so an agent writes a code-mode program against
exactly the tools it found: parameters typed, their descriptions as doc comments, and the result's type."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
MAX_DEPTH = 6  # deeper schemas are declared `unknown` past this: a declaration is read by a model, not a compiler
MAX_DOC = 300  # characters of a description kept as a doc comment
INDENT = "  "
# What `await tools.x(...)` gives without an output schema: the structured result, else its text (parsed if JSON).
UNTYPED_RESULT = "unknown"
# A sentence ends where a capital follows its stop, so "e.g. a" does not end one.
_SENTENCE_END = re.compile(r"[.!?](?= [A-Z])")
_SCALARS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


def key(name: str) -> str:
    return name if IDENTIFIER.match(name) else json.dumps(name)


def accessor(name: str) -> str:
    """How a program reaches the tool: `tools.jarvis_config`, or `tools["everything__get-sum"]` for a name that is
    not an identifier."""
    return f"tools.{name}" if IDENTIFIER.match(name) else f"tools[{json.dumps(name)}]"


def doc(text: str, indent: str) -> str:
    """A doc comment that cannot end early, whatever the description says."""
    text = clipped(" ".join(text.split())).replace("*/", "* /")
    return f"{indent}/** {text} */\n" if text else ""


def clipped(text: str, limit: int = MAX_DOC) -> str:
    """A description cut to `limit` characters where it reads as whole: after its last sentence that fits, when
    that keeps at least half of it, else after its last whole word, marked as cut. A model reading half a sentence
    ("Use the 'head' parameter to read only the first N lines of a file, ") gets a broken instruction, not a
    shorter one."""
    if len(text) <= limit:
        return text
    ends = [m.start() for m in _SENTENCE_END.finditer(text, 0, limit + 2) if m.start() < limit]
    if ends and ends[-1] >= limit // 2:
        return text[: ends[-1] + 1]
    word = text.rfind(" ", 0, limit)
    return (text[:word] if word > 0 else text[: limit - 1]).rstrip(" ,;:-") + "…"


def type_of(schema: Any, depth: int = 0, indent: str = "") -> str:
    if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
        return "unknown"
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list) and schema[union]:
            return " | ".join(_wrapped(type_of(s, depth + 1, indent)) for s in schema[union])
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return " & ".join(_wrapped(type_of(s, depth + 1, indent)) for s in schema["allOf"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_wrapped(type_of({**schema, "type": k}, depth, indent)) for k in kind) or "unknown"
    if kind == "array":
        return f"Array<{type_of(schema.get('items'), depth + 1, indent)}>"
    if kind == "object" or "properties" in schema:
        return object_type(schema, depth, indent)
    return _SCALARS.get(str(kind), "unknown")


def object_type(schema: Mapping[str, Any], depth: int, indent: str) -> str:
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    inner = indent + INDENT
    lines = []
    if isinstance(properties, Mapping):
        required = set(schema.get("required") or ())
        for name, sub in properties.items():
            description = sub.get("description", "") if isinstance(sub, Mapping) else ""
            optional = "" if name in required else "?"
            lines.append(
                f"{doc(str(description), inner)}{inner}{key(str(name))}{optional}: {type_of(sub, depth + 1, inner)};"
            )
    if not lines and (isinstance(extra, Mapping) or extra is None):  # a map, written as TypeScript writes one
        return f"Record<string, {type_of(extra, depth + 1, indent) if extra else 'unknown'}>"
    if isinstance(extra, Mapping):
        lines.append(f"{inner}[key: string]: {type_of(extra, depth + 1, inner) if extra else 'unknown'};")
    return "{\n" + "\n".join(lines) + f"\n{indent}}}" if lines else "{}"


def _wrapped(text: str) -> str:
    return f"({text})" if " | " in text or " & " in text else text


def params_type(input_schema: Mapping[str, Any]) -> str:
    return type_of(input_schema, 0, "")


def result_type(output_schema: Mapping[str, Any] | None) -> str:
    return type_of(output_schema, 0, "") if output_schema else UNTYPED_RESULT


def member(name: str, description: str, input_schema: Mapping[str, Any], params: str, result: str) -> str:
    """The method's text from its parameters' and result's types (written out, or the name of a shared type)."""
    optional = "" if (input_schema.get("required") or []) else "?"
    return f"{doc(description, '')}{key(name)}(args{optional}: {params}): Promise<{result}>;"
