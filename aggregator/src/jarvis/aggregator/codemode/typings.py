"""What `tool_find` and `tool_describe` answer with format="typescript": one declarations file, read by the model.

A model writes a program against it, so it is TypeScript as a model has read it countless times, not JSON holding
quoted TypeScript (whose escaped quotes and newlines cost bytes and make it harder to read): the shared types once,
then `declare const tools: {...}` with a method per callable tool, then a comment line per tool found that cannot
be called yet, under what would make it callable. It is valid TypeScript (a test has Deno check programs against it).

A type that several of the tools share word for word (a server's tools that all answer with the same graph, say)
is declared once under a name and referred to by it: the model reads it once, and sees that the tools agree.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jarvis.aggregator.codemode.typescript import member, params_type, result_type

# A shared type is named only when that is shorter than writing it out again: `type X = ...;` and the references
# cost about this much.
MIN_SHARED = 80
_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True)
class Typed:
    """A tool a program can call: declared."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Untyped:
    """A tool found that a program cannot call yet (not installed): named, with what would make it callable."""

    name: str
    description: str
    why: str


def typings(header: str, tools: Sequence[Typed], others: Sequence[Untyped] = ()) -> str:
    written = [(t, params_type(t.input_schema), result_type(t.output_schema)) for t in tools]
    shared = _shared_names(written)
    lines = [f"// {_one_line(header)}"]
    lines += [f"type {name} = {text};" for text, name in shared.items()]
    if written:
        lines.append("declare const tools: {")
        lines += [
            member(t.name, t.description, t.input_schema, shared.get(params, params), shared.get(result, result))
            for t, params, result in written
        ]
        lines.append("};")
    for why, group in _grouped(others).items():
        lines.append(f"// Cannot be called yet, {why}:")
        lines += [f"//   {_one_line(o.name)}: {_one_line(o.description)}" for o in group]
    return "\n".join(lines) + "\n"


def _grouped(others: Sequence[Untyped]) -> dict[str, list[Untyped]]:
    """The tools that cannot be called yet by why, so a reason several share (one server not installed) is said
    once."""
    groups: dict[str, list[Untyped]] = {}
    for other in others:
        groups.setdefault(_one_line(other.why), []).append(other)
    return groups


def _shared_names(written: Sequence[tuple[Typed, str, str]]) -> dict[str, str]:
    """Each object type written out more than once, by its text, with the name it is declared under: after the
    first tool that uses it and what it is there (`OpenNodesResult`, `CreateIssueArgs`)."""
    uses = Counter(text for _, params, result in written for text in (params, result))
    names: dict[str, str] = {}
    for tool, params, result in written:
        for text, role in ((params, "Args"), (result, "Result")):
            if uses[text] > 1 and text not in names and text.startswith("{") and len(text) >= MIN_SHARED:
                names[text] = _unique(_pascal(tool.name.rsplit("__", 1)[-1]) + role, set(names.values()))
    return names


def _pascal(name: str) -> str:
    words = "".join(w[:1].upper() + w[1:] for w in _WORD.findall(name))
    return words if words[:1].isalpha() else f"T{words}"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}{n}", n + 1
    return candidate


def _one_line(text: str) -> str:
    """Free text (a description, a query) kept on its comment's one line."""
    return " ".join(text.split())
