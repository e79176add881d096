"""Objects that record every attempt to run their code; inspect_state must trip none of them."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from project_mcp_server.registry import register

TRIPPED: list[str] = []


def _trip(what: str) -> None:
    TRIPPED.append(what)


class TrapMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        _trip("__instancecheck__")
        return False

    def __subclasscheck__(cls, subclass: Any) -> bool:
        _trip("__subclasscheck__")
        return False

    def __repr__(cls) -> str:
        _trip("metaclass __repr__")
        return "TrapClass"


class Trap(metaclass=TrapMeta):
    """Every dunder a careless reader would call records itself."""

    def __init__(self) -> None:
        object.__setattr__(self, "visible", {"ok": 1})

    def __getattribute__(self, name: str) -> Any:
        _trip(f"__getattribute__ {name}")
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        _trip(f"__getattr__ {name}")
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        _trip(f"__setattr__ {name}")

    def __delattr__(self, name: str) -> None:
        _trip(f"__delattr__ {name}")

    def __repr__(self) -> str:
        _trip("__repr__")
        return "Trap()"

    def __str__(self) -> str:
        _trip("__str__")
        return "Trap"

    def __eq__(self, other: object) -> bool:
        _trip("__eq__")
        return False

    def __hash__(self) -> int:
        return hash("visible")  # collides with the str key "visible" on purpose

    def __len__(self) -> int:
        _trip("__len__")
        return 0

    def __iter__(self) -> Any:
        _trip("__iter__")
        return iter(())

    def __bool__(self) -> bool:
        _trip("__bool__")
        return True

    def __dir__(self) -> list[str]:
        _trip("__dir__")
        return []

    @property
    def computed(self) -> int:
        _trip("property computed")
        return 1

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        _trip("__class__")
        return dict


class TrapDict(dict[Any, Any]):
    def __getitem__(self, key: Any) -> Any:
        _trip("TrapDict.__getitem__")
        return super().__getitem__(key)

    def __iter__(self) -> Any:
        _trip("TrapDict.__iter__")
        return super().__iter__()

    def items(self) -> Any:
        _trip("TrapDict.items")
        return super().items()

    def __len__(self) -> int:
        _trip("TrapDict.__len__")
        return super().__len__()

    def __missing__(self, key: Any) -> Any:
        _trip("TrapDict.__missing__")
        self[key] = None


class TrapList(list[Any]):
    def __iter__(self) -> Any:
        _trip("TrapList.__iter__")
        return super().__iter__()

    def __getitem__(self, index: Any) -> Any:
        _trip("TrapList.__getitem__")
        return super().__getitem__(index)

    def __len__(self) -> int:
        _trip("TrapList.__len__")
        return super().__len__()


class Slotted:
    __slots__ = ("a", "unset")

    def __init__(self) -> None:
        self.a = 5


Point = namedtuple("Point", "x y")

TRAP = Trap()
TRAP_DICT = TrapDict({"k": [1, 2], TRAP: "keyed by a trap"})
TRAP_LIST = TrapList([1, {"two": 2}])
SLOTTED = Slotted()
POINT = Point(3, 4)
register("traps", {"trap": TRAP, "dict": TRAP_DICT, "list": TRAP_LIST, "slotted": SLOTTED, "point": POINT})
TRIPPED.clear()  # building the objects above may have tripped; only what inspect_state does counts
