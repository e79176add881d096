"""The backend interface: a category of debug tools, their argument specs, and how to call them.

A backend reads its credentials when called (never at import or construction), returns a
JSON-able result, and raises `jarvis.common.errors` errors that name the remote call that failed.
The gateway has already checked the arguments against the backend's `Param`s (`jarvis.common.params`, the
one way Jarvis declares tool arguments, shared with the aggregator's tools) and filled in
defaults, so a backend may index required arguments directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from jarvis.common.errors import NotFound
from jarvis.common.params import Param


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name (globally unique, prefixed by its category, e.g. "cloudwatch_filter_logs")."""

    name: str
    description: str
    params: tuple[Param, ...]


class Backend(Protocol):
    """A category of debug tools: "cloudwatch", "stepfunctions", "langsmith", "jira", "project"."""

    category: str
    description: str  # one line

    def tools(self) -> Sequence[ToolSpec]: ...

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any: ...


ClientT = TypeVar("ClientT")


class ToolTable(Generic[ClientT]):
    """A backend's tools and the function behind each, so backends share one dispatch.

    Each function gets the client the backend built for this one call (with the credentials
    found now) and the checked arguments; building it per call keeps concurrent calls apart.
    """

    def __init__(
        self, category: str, entries: Iterable[tuple[ToolSpec, Callable[[ClientT, Mapping[str, Any]], Any]]]
    ) -> None:
        self._category = category
        self._entries = {spec.name: (spec, run) for spec, run in entries}

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(spec for spec, _ in self._entries.values())

    def call(
        self, tool: str, arguments: Mapping[str, Any], connect: Callable[[], AbstractContextManager[ClientT]]
    ) -> Any:
        """Run `tool` with a client from `connect` (where credentials are checked), then close it."""
        entry = self._entries.get(tool)
        if entry is None:
            raise NotFound(f"the {self._category} backend has no tool '{tool}'")
        with connect() as client:
            return entry[1](client, arguments)
