"""Reading objects without running any of their code: the primitives behind `inspect_state`.

Why this is read-only, rule by rule (`mcp-server/tests/test_readonly_rules.py`
checks the mechanical ones):

- No builtin that dispatches to the object's type is ever applied to an application object:
  no `getattr`/`hasattr`/`isinstance`/`repr`/`str`/`len`/`iter`, which would run `__getattr__`,
  `__getattribute__`, properties, `__class__` overrides, `__repr__`, `__len__` or `__iter__`.
  `type(obj)` reads the interpreter's type pointer; `issubclass` between two plain classes
  compares MROs in C.
- Classes are read through `type`'s own C descriptors (`__mro__`, `__dict__`, `__qualname__`),
  so metaclass overrides never run.
- Names are found by iterating a dict and comparing exact `str` keys, never by `d[key]`: a
  lookup would call the `__eq__` of an application key whose hash collides, and would reach a
  `defaultdict`'s `__missing__` (which inserts).
- Instance attributes come from the instance `__dict__` only when the type's `__dict__` slot is
  the interpreter's own descriptor, from `__slots__` through C member descriptors, and from
  named tuples through C `_tuplegetter`s. Properties and other Python descriptors are reported,
  never called.
- Containers are walked with the base type's C methods (`dict.items(obj)`, `list.__iter__(obj)`),
  so a subclass's overrides never run.
- Nothing is assigned: this module has no attribute or item assignment at all and only builds
  new lists and dicts of its own.

One effect remains, and it is not observable by the application: reading an instance `__dict__`
may make CPython materialise the dict object behind an instance whose attributes are stored
inline.

What is never shown, however it is reached: the process environment (`os.environ`, its bytes
twin, their backing dicts, `posix.environ`) and any entry or attribute whose name looks like a
credential (`schemas.REFUSED_STATE_NAMES`); each renders as `HIDDEN`. The server runs with a minimal
environment anyway (Jarvis starts it so); this keeps a copy the application made out too.
"""

from __future__ import annotations

import collections
import math
import os
import re
import sys
import types
from typing import Any, cast

from project_mcp_server.schemas import REFUSED_STATE_NAMES

MISSING: Any = object()
MAX_ITEMS = 100
MAX_STR = 4096

# The interpreter's own descriptors, taken once; calling their __get__ runs C code only.
_MRO: Any = type.__dict__["__mro__"]
_CLASS_DICT: Any = type.__dict__["__dict__"]
_QUALNAME: Any = type.__dict__["__qualname__"]
_TYPE_MODULE: Any = type.__dict__["__module__"]
_MODULE_DICT: Any = cast(Any, types.ModuleType).__dict__["__dict__"]
_PROBE: Any = collections.namedtuple("_PROBE", "field")  # only the type of its field is needed
_TUPLEGETTER: type = type(_PROBE.field)
_C_GETTERS = (types.MemberDescriptorType, _TUPLEGETTER)
_SCALARS = (bool, int, str, type(None))
_SEQUENCES: tuple[type, ...] = (list, tuple, set, frozenset, collections.deque)


HIDDEN = "<hidden: inspect_state never shows the environment or credentials>"
SECRET_NAME = re.compile(REFUSED_STATE_NAMES, re.IGNORECASE)


class Unreadable(Exception):
    """The value exists but reading it would run application code."""


def type_name(cls: type) -> str:
    """`module.Qualname` of a class, read without running metaclass code."""
    module = _TYPE_MODULE.__get__(cls, type)
    qualname = _QUALNAME.__get__(cls, type)
    return qualname if module == "builtins" else f"{module}.{qualname}"


def _find(pairs: Any, key: str) -> Any:
    for k, v in pairs:
        if (type(k) is str and k == key) or (type(k) is int and int.__repr__(k) == key):
            return v
    return MISSING


def dict_get(mapping: Any, key: str) -> Any:
    """The value of `key` in a dict (or a dict subclass) without calling any application code."""
    return _find(dict.items(mapping), key)


def _class_items(klass: type) -> Any:
    """The (name, value) pairs of one class's own dict: a C mappingproxy over a plain dict."""
    return _CLASS_DICT.__get__(klass, type).items()


def _class_lookup(cls: type, name: str) -> Any:
    """`name` along the MRO of `cls`, as stored in the class dicts (descriptors are not invoked)."""
    for klass in _MRO.__get__(cls, type):
        value = _find(_class_items(klass), name)
        if value is not MISSING:
            return value
    return MISSING


def _is_data_descriptor(attr: Any) -> bool:
    kind = type(attr)
    return _class_lookup(kind, "__set__") is not MISSING or _class_lookup(kind, "__delete__") is not MISSING


def instance_dict(obj: Any) -> dict[str, Any] | None:
    """The instance `__dict__`, if the type keeps one through the interpreter's own descriptor."""
    descriptor = _class_lookup(type(obj), "__dict__")
    if type(descriptor) not in (types.GetSetDescriptorType, types.MemberDescriptorType):
        return None
    value = descriptor.__get__(obj, type(obj))
    return value if type(value) is dict else None


def _slot_values(obj: Any) -> list[tuple[str, Any]]:
    """(name, value) of every set `__slots__` member of `obj`."""
    found: list[tuple[str, Any]] = []
    for klass in _MRO.__get__(type(obj), type):
        for name, attr in _class_items(klass):
            if type(attr) is types.MemberDescriptorType and type(name) is str and not name.startswith("__"):
                try:
                    found.append((name, attr.__get__(obj, type(obj))))
                except AttributeError:
                    continue  # declared but never assigned
    return found


def lookup(obj: Any, segment: str) -> Any:
    """One path step: a dict key, a sequence index, a module global or an attribute."""
    kind = type(obj)
    if issubclass(kind, dict):
        return dict_get(obj, segment)
    if issubclass(kind, (list, tuple)) and segment.lstrip("-").isdigit():
        base: Any = list if issubclass(kind, list) else tuple
        index, size = int(segment), base.__len__(obj)
        return base.__getitem__(obj, index) if -size <= index < size else MISSING
    if issubclass(kind, types.ModuleType):
        return dict_get(_MODULE_DICT.__get__(obj, kind), segment)
    if issubclass(kind, type):
        return _class_lookup(obj, segment)
    attr = _class_lookup(kind, segment)
    if attr is not MISSING and type(attr) in _C_GETTERS:
        try:
            return attr.__get__(obj, kind)
        except AttributeError:
            return MISSING
    if attr is not MISSING and _is_data_descriptor(attr):
        raise Unreadable(
            f"'{segment}' is a {type_name(type(attr))} of {type_name(kind)}; reading it would run application code"
        )
    own = instance_dict(obj)
    value = dict_get(own, segment) if own is not None else MISSING
    return value if value is not MISSING else attr


def _environment_objects() -> tuple[Any, ...]:
    """The process environment in every form the interpreter keeps it (all standard-library objects)."""
    found: list[Any] = [os.environ, lookup(os.environ, "_data")]  # _data: the dict behind the mapping
    environb = dict_get(_MODULE_DICT.__get__(os, types.ModuleType), "environb")
    if environb is not MISSING:
        found += [environb, lookup(environb, "_data")]
    for name in ("posix", "nt"):
        native = dict.get(sys.modules, name)
        if native is not None:
            found.append(dict_get(_MODULE_DICT.__get__(native, types.ModuleType), "environ"))
    return tuple(o for o in found if o is not None and o is not MISSING)


_ENVIRONMENT = _environment_objects()


def is_environment(obj: Any) -> bool:
    return any(obj is env for env in _ENVIRONMENT)


def secret_name(name: Any) -> bool:
    """Whether an entry or attribute name looks like it holds a credential (exact str keys only)."""
    return type(name) is str and SECRET_NAME.search(name) is not None


def _key(key: Any) -> str:
    kind = type(key)
    if kind is str:
        return key  # type: ignore[no-any-return]
    if kind in (int, bool, float) or key is None:
        to_text: Any = kind.__repr__
        return str.__str__(to_text(key))
    return f"<{type_name(kind)}@{id(key):x}>"


def _scalar(obj: Any) -> Any:
    if type(obj) is str and str.__len__(obj) > MAX_STR:
        return str.__getitem__(obj, slice(0, MAX_STR)) + f"… ({str.__len__(obj)} chars)"
    return obj


def _items(kind: type, obj: Any) -> list[tuple[str, Any]]:
    """Up to MAX_ITEMS + 1 (label, child) pairs of a container, read with its base type's C code."""
    pairs: list[tuple[str, Any]] = []
    if issubclass(kind, dict):
        source: Any = ((_key(k), v) for k, v in dict.items(obj))
    elif issubclass(kind, types.ModuleType):
        module_dict = _MODULE_DICT.__get__(obj, kind)
        source = ((k, v) for k, v in dict.items(module_dict) if type(k) is str and not k.startswith("_"))
    else:
        base: Any = next(b for b in _SEQUENCES if issubclass(kind, b))
        source = ((int.__repr__(i), v) for i, v in enumerate(base.__iter__(obj)))
    for pair in source:
        pairs.append(pair)
        if list.__len__(pairs) > MAX_ITEMS:
            break
    return pairs


def _size(kind: type, obj: Any) -> int | None:
    bases: tuple[Any, ...] = (dict, *_SEQUENCES)
    for base in bases:
        if issubclass(kind, base):
            return int(base.__len__(obj))
    return None


def render(obj: Any, depth: int, _path: frozenset[int] = frozenset()) -> Any:
    """A JSON-ready picture of `obj`, `depth` levels deep, built without running application code."""
    if is_environment(obj):
        return HIDDEN
    kind = type(obj)
    if kind in _SCALARS:
        return _scalar(obj)
    if kind is float:
        return obj if math.isfinite(obj) else float.__repr__(obj)
    if kind in (bytes, bytearray):
        return {"__type__": kind.__name__, "length": kind.__len__(obj), "hex": kind.hex(obj[:64])}
    if issubclass(kind, type):
        return {"__class__": type_name(obj)}
    if issubclass(kind, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, classmethod, staticmethod)):
        return {"__callable__": type_name(kind)}
    container = issubclass(kind, (dict, types.ModuleType, *_SEQUENCES))
    if depth <= 0 or id(obj) in _path:
        summary: dict[str, Any] = {"__type__": type_name(kind), "__truncated__": True}
        size = _size(kind, obj)
        return summary if size is None else {**summary, "size": size}
    inner = _path | {id(obj)}
    if container:
        pairs = _items(kind, obj)
        values = [HIDDEN if secret_name(k) else render(v, depth - 1, inner) for k, v in pairs[:MAX_ITEMS]]
        more = list.__len__(pairs) > MAX_ITEMS
        if issubclass(kind, (dict, types.ModuleType)):
            shown: Any = dict(zip([k for k, _ in pairs[:MAX_ITEMS]], values, strict=True))
            shown = {**shown, "…": "more entries not shown"} if more else shown
        else:
            shown = [*values, "… more items not shown"] if more else values
        if kind in (dict, list):
            return shown
        return {"__type__": type_name(kind), "items": shown}
    attrs = [(k, v) for k, v in dict.items(instance_dict(obj) or {}) if type(k) is str]
    attrs += _slot_values(obj)
    rendered = {k: HIDDEN if secret_name(k) else render(v, depth - 1, inner) for k, v in attrs[:MAX_ITEMS]}
    return {"__type__": type_name(kind), **rendered}
