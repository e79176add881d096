"""`inspect_state`: read a registered state singleton or a module global by dotted path.

Read-only by construction: the path is walked and the value rendered with the primitives of
`project_mcp_server.readonly`, which never call application code and never assign. Modules are
looked up among those already imported (`sys.modules`); nothing is imported on request,
because importing runs a module's code.

The process environment and credential-like names are refused on the path and hidden in what
is rendered (`readonly.HIDDEN`): `os.environ` is not project state, and secrets do not belong in
an agent's transcript.
"""

from __future__ import annotations

import sys
from typing import Any

from project_mcp_server import readonly
from project_mcp_server.config import ServerConfig
from project_mcp_server.registry import registered
from project_mcp_server.tools.base import InvalidParams, ToolDef, builtin

_REFUSED = (
    "'{path}' names the process environment or a credential, which inspect_state never reads; "
    "inspect the application's own state instead"
)


def _root(segments: list[str]) -> tuple[Any, int]:
    """The object the path starts from and how many segments it consumed."""
    value = readonly.dict_get(registered(), segments[0])
    if value is not readonly.MISSING:
        return value, 1
    # The longest imported module name that prefixes the path ("pkg.mod.GLOBAL" -> "pkg.mod").
    modules = dict(sys.modules)  # a plain dict: copying it runs no application code
    for end in range(list.__len__(segments), 0, -1):
        value = readonly.dict_get(modules, ".".join(segments[:end]))
        if value is not readonly.MISSING:
            return value, end
    names = list(registered())
    names.sort()  # the registry's own str keys
    raise LookupError(
        f"'{segments[0]}' is neither a registered state name nor an imported module; registered: {names or 'none'}"
    )


def inspect(path: str, depth: int) -> dict[str, Any]:
    """`{value}` for the object at `path`, or `{value: None, error}` when it cannot be read."""
    segments = path.split(".")
    if any(not s for s in segments):
        raise InvalidParams(f"path '{path}' has an empty segment; use dots between names, e.g. 'cache.users'")
    if any(readonly.secret_name(s) for s in segments):
        raise InvalidParams(_REFUSED.format(path=path))
    try:
        obj, used = _root(segments)
        for index in range(used, list.__len__(segments)):
            if readonly.is_environment(obj):
                raise InvalidParams(_REFUSED.format(path=path))
            obj = readonly.lookup(obj, segments[index])
            if obj is readonly.MISSING:
                walked = ".".join(segments[: index + 1])
                return {"value": None, "error": f"nothing at '{walked}'"}
        if readonly.is_environment(obj):
            raise InvalidParams(_REFUSED.format(path=path))
        rendered = readonly.render(obj, depth)
    except (LookupError, readonly.Unreadable) as exc:
        return {"value": None, "error": exc.args[0]}  # our own message, a str
    except RuntimeError:  # "changed size during iteration": the application wrote while we read
        return {"value": None, "error": f"'{path}' changed while it was being read; read it again"}
    return {"value": rendered, "type": readonly.type_name(type(obj))}


def tool(config: ServerConfig) -> ToolDef:
    """The `inspect_state` tool (it needs no configuration: state comes from the registry)."""
    return builtin("inspect_state", lambda args: inspect(args["path"], args["depth"]), read_only=True)
