"""How the parts of an aggregator tell each other what changed, without writing into a shared context.

The context handlers reach is built once and frozen; what becomes known later (the surfaces served, once all
are built) or happens later (a write that adds or removes servers) travels through these instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Signal(Generic[T]):
    """Something that happens, awaited by whoever announces it: every listener has run when `emit` returns.

    A listener that fails is logged and skipped: the write that announced the change has already happened,
    and its caller must not see a listener's error as its own.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._listeners: list[Callable[[T], Awaitable[None]]] = []

    def connect(self, listener: Callable[[T], Awaitable[None]]) -> None:
        self._listeners.append(listener)

    async def emit(self, event: T) -> None:
        for listener in self._listeners:
            try:
                await listener(event)
            except Exception:
                log.exception("a listener of %s failed", self.name)


class Published(Generic[T]):
    """A value that exists only once the aggregator is assembled, published once, read afterwards."""

    def __init__(self, name: str, default: T) -> None:
        self.name = name
        self._value = default
        self._published = False

    def publish(self, value: T) -> None:
        if self._published:
            raise RuntimeError(f"{self.name} was already published")
        self._value = value
        self._published = True

    @property
    def value(self) -> T:
        return self._value
