"""The `debug` gateway (spec 002): discovery by category and execution of any backend's tool."""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jarvis.common.errors import Internal, JarvisError, NotFound
from jarvis.common.params import PARAM_TYPES
from jarvis.debug.backends.base import Backend, ToolSpec
from jarvis.debug.domain.arguments import check_arguments, describe_tool, parse_json

log = logging.getLogger(__name__)

LIST = "list"
USAGE = (
    'debug(tool="list:<category>") shows a category\'s tools with their arguments; '
    'debug(tool="<tool>", arguments=\'{"name": "value"}\') runs one'
)


@dataclass(frozen=True)
class Category:
    name: str
    description: str
    tools: tuple[str, ...]


class Gateway:
    """Routes "list", "list:<category>" and tool names to the backends; owns every error's guidance."""

    def __init__(self, backends: Sequence[Backend]) -> None:
        self._backends = {b.category: b for b in backends}
        if len(self._backends) != len(backends):
            raise ValueError("two debug backends share a category")
        self._index()  # a duplicate tool name or bad param type is a programming error: fail at start

    def _index(self) -> dict[str, tuple[Backend, ToolSpec]]:
        """Tool name -> (backend, spec), built per request so a backend's tool list may change."""
        index: dict[str, tuple[Backend, ToolSpec]] = {}
        for backend in self._backends.values():
            for spec in backend.tools():
                if spec.name in index:
                    raise ValueError(f"debug tool {spec.name} is defined by two backends")
                # One JSON type per debug argument: the gateway coerces what agents send to exactly that type.
                bad = [p.name for p in spec.params if not isinstance(p.type, str) or p.type not in PARAM_TYPES]
                if bad:
                    raise ValueError(f"debug tool {spec.name}: parameters {bad} have unknown types")
                index[spec.name] = (backend, spec)
        return index

    # ------------------------------------------------------------ discovery

    def categories(self) -> list[Category]:
        return [Category(b.category, b.description, tuple(s.name for s in b.tools())) for b in self._backends.values()]

    def tools(self, category: str = "") -> list[tuple[str, ToolSpec]]:
        """(category, spec) of one category's tools, or of every tool when `category` is empty."""
        if not category:
            return [(b.category, s) for b in self._backends.values() for s in b.tools()]
        backend = self._backends.get(category.strip().lower())
        if backend is None:
            similar = difflib.get_close_matches(category, list(self._backends), n=3, cutoff=0.5)
            hint = f"did you mean {', '.join(similar)}? " if similar else ""
            raise NotFound(
                f"unknown debug category '{category}'; {hint}categories: {', '.join(self._backends)}. "
                f'Call debug(tool="list") to see them with descriptions'
            )
        return [(backend.category, s) for s in backend.tools()]

    def listing(self) -> dict[str, Any]:
        """What `debug(tool="list")` answers."""
        return {
            "categories": [
                {"category": c.name, "description": c.description, "tools": list(c.tools)} for c in self.categories()
            ],
            "usage": USAGE,
        }

    def category_listing(self, category: str) -> dict[str, Any]:
        """What `debug(tool="list:<category>")` answers: every tool with its full argument schema."""
        tools = self.tools(category)  # raises NotFound for an unknown category
        backend = self._backends[category.strip().lower()]
        return {
            "category": backend.category,
            "description": backend.description,
            "tools": [describe_tool(spec) for _, spec in tools],
            "usage": USAGE,
        }

    # ------------------------------------------------------------ the gateway

    def run(self, tool: str, arguments_json: str) -> Any:
        """The one entry point of the `debug` tool."""
        name = tool.strip()
        if name in ("", LIST):
            parse_json(arguments_json, None)  # a list call with broken JSON still deserves to hear it
            return self.listing()
        if name.startswith(LIST + ":"):
            category = name[len(LIST) + 1 :].strip()
            return self.category_listing(category) if category else self.listing()
        return self.invoke(name, arguments_json)

    def invoke(self, tool: str, arguments_json: str) -> Any:
        """Execute one tool: resolve it, parse and check its arguments, call its backend."""
        index = self._index()
        entry = index.get(tool)
        if entry is None:
            raise NotFound(self._unknown(tool, index))
        backend, spec = entry
        arguments = check_arguments(spec, parse_json(arguments_json, spec))
        started = time.perf_counter()
        outcome = "ok"
        try:
            return backend.call(spec.name, arguments)
        except JarvisError as exc:
            outcome = exc.kind
            # Same kind, so the caller still tells "not configured" from "not found"; the prefix says
            # which tool failed, the backend's own message says which remote call and why.
            raise type(exc)(f"debug tool {spec.name}: {exc.message}") from None
        except Exception as exc:
            outcome = "internal"
            log.exception("debug tool failed", extra={"tool": spec.name})
            raise Internal(
                f"debug tool {spec.name} failed unexpectedly ({exc.__class__.__name__}: {exc}); "
                "the debug service log has the details"
            ) from None
        finally:
            log.info(
                "debug tool called",
                extra={"tool": spec.name, "outcome": outcome, "ms": round((time.perf_counter() - started) * 1000, 1)},
            )

    def _unknown(self, tool: str, index: dict[str, tuple[Backend, ToolSpec]]) -> str:
        if tool.lower() in self._backends:
            return (
                f"'{tool}' is a category, not a tool; call debug(tool=\"list:{tool.lower()}\") "
                "to see its tools and their arguments"
            )
        names = list(index)
        similar = difflib.get_close_matches(tool.lower().replace("-", "_"), names, n=5, cutoff=0.5)
        similar += [n for n in names if tool.lower() in n and n not in similar][: 5 - len(similar)]
        if similar:
            return (
                f"unknown debug tool '{tool}'; similar tools: {', '.join(similar)}. "
                f'Call debug(tool="list") for categories, debug(tool="list:<category>") for their tools'
            )
        return (
            f"unknown debug tool '{tool}'; available tools: {', '.join(names)}. "
            f'Call debug(tool="list") for categories, debug(tool="list:<category>") for their tools'
        )
