"""Who hears what the host sees (list changes, resource updates, relayed notices): each listener is told in turn, and
one that fails is logged without keeping the others from hearing it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, ParamSpec

log = logging.getLogger(__name__)
P = ParamSpec("P")


class Listeners(Generic[P]):
    def __init__(self, what: str) -> None:
        self.what = what  # for the log line of a listener that failed
        self._all: list[Callable[P, None]] = []

    def add(self, listener: Callable[P, None]) -> None:
        self._all.append(listener)

    def tell(self, *args: P.args, **kwargs: P.kwargs) -> None:
        for listener in self._all:
            try:
                listener(*args, **kwargs)
            except Exception:
                log.exception("%s listener failed", self.what)
