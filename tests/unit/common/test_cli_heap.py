"""A serving process's start-up heap: its garbage collected once, everything left frozen out of full collections."""

from __future__ import annotations

import gc
import weakref

from jarvis.cli.heap import freeze_startup_heap


class Node:
    other: Node | None = None


def test_startup_garbage_is_freed_and_what_lives_is_frozen() -> None:
    first, second = Node(), Node()
    first.other, second.other = second, first  # a cycle only the collector frees
    garbage = weakref.ref(first)
    del first, second
    kept = Node()
    walked_before = len(gc.get_objects())
    try:
        frozen = freeze_startup_heap()
        assert garbage() is None  # collected, not frozen with the rest
        assert frozen > 1000  # the test process's modules at least (a frozen object freed since leaves the count)
        assert not any(o is kept for o in gc.get_objects())  # no collection walks it any more
        assert len(gc.get_objects()) < walked_before / 10
    finally:
        gc.unfreeze()
    assert any(o is kept for o in gc.get_objects())
