"""The surface framework: consolidated action-based tools, their schemas, annotations and dispatch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import jsonschema
import mcp_types as types

from jarvis.aggregator.tooling.json_types import JsonObject
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common import params as params_rules
from jarvis.common import scopes as scope_rules
from jarvis.common.errors import InvalidArgument, NotFound, PermissionDenied
from jarvis.common.schema_check import compile_check

P = TypeVar("P")
# A handler gets its action's parameters (an instance of the action's `params` dataclass, or the arguments as given
# when it declares none) and the caller.
Handler = Callable[[P, Principal], Awaitable[Any]]


@dataclass(frozen=True)
class Action(Generic[P]):
    """One operation of a consolidated tool.

    `read_only`, `destructive` and `idempotent` describe what the action does; the tool's
    annotations are derived from its actions so they can never disagree with the code.
    `admin` marks writes that define a command or image (they need the admin scope);
    `self_service` marks an action on the caller's own records (their own tokens): a person at the console may make
    it whatever their scopes, the handler keeping to their records; anyone else needs what the action says;
    `admin_if` marks the calls of an otherwise ordinary action that need it too, judged on the
    arguments (a custom client config path, a setting that weakens security), and `admin_why` says why those
    calls need it, for the refusal to tell the caller.
    `params` is the dataclass of the action's parameters: its part of the tool's input schema, and what the
    handler receives (so mypy holds the two to the same type); its fields without a default are the action's
    required arguments.
    """

    name: str
    handler: Handler[P]
    params: type[P] | None = None
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    required: tuple[str, ...] = ()
    admin: bool = False
    admin_if: Callable[[Mapping[str, Any]], bool] | None = None
    admin_why: Callable[[Mapping[str, Any]], str] | None = None
    self_service: bool = False
    any_json: frozenset[str] = field(default=frozenset(), init=False, compare=False)

    def __post_init__(self) -> None:
        if self.params is not None and not self.required:
            declared = tuple(p.name for p in params_rules.params_of(self.params) if p.required)
            object.__setattr__(self, "required", declared)

        # Its parameters that take any JSON value: for them an empty list or string is a value, not a missing one.
        object.__setattr__(self, "any_json", _any_json(self.params))

    def needs_admin(self, args: Mapping[str, Any]) -> bool:
        return self.admin or self.admin_if_met(args)

    def admin_if_met(self, args: Mapping[str, Any]) -> bool:
        """Whether these arguments need admin whoever calls (`admin_if`), a self-service call included."""
        return self.admin_if is not None and self.admin_if(args)

    def why_admin(self, args: Mapping[str, Any]) -> str:
        """Why these arguments need the admin scope when the action itself does not ("" if they do not)."""
        if self.admin or self.admin_why is None or not self.needs_admin(args):
            return ""
        return self.admin_why(args)


# A Jarvis tool's summary, at most: tool_find's embedding reads this much of a tool's context (discovery/dense.py).
MAX_SUMMARY = 200


@dataclass
class Tool:
    """A tool of a surface. With `actions`, an `action` parameter routes to one of them;
    without, `handler` runs directly (single-purpose tools such as `jarvis_check_status`)."""

    name: str
    description: str
    properties: Mapping[str, JsonObject] = field(default_factory=dict)
    actions: Sequence[Action[Any]] = ()
    handler: Handler[Any] | None = None
    params: type[Any] | None = None  # a single-purpose tool's parameters, as for an action
    read_only: bool = False
    idempotent: bool = False
    admin: bool = False  # single-purpose tools that define an image or command (e.g. image_rebuild)
    # What the tool does, in words, for tool_find alone: the description is held to 60 characters for the
    # listings' budgets and mostly names actions ("list|info|uninstall|…"), which a search by meaning reads poorly.
    summary: str = ""

    def __post_init__(self) -> None:
        if len(self.description) > 60:
            raise ValueError(f"description of {self.name} is over 60 characters")
        if len(self.summary) > MAX_SUMMARY:
            raise ValueError(f"summary of {self.name} is over {MAX_SUMMARY} characters")
        if bool(self.actions) == (self.handler is not None):
            raise ValueError(f"{self.name} needs either actions or a handler")
        self._by_action = {a.name: a for a in self.actions}
        self._required = tuple(p.name for p in params_rules.params_of(self.params) if p.required) if self.params else ()
        self._any_json = _any_json(self.params)
        self.input_schema = self._build_schema()
        self._validator = jsonschema.Draft202012Validator(self.input_schema)
        self._valid = compile_check(self.input_schema)  # the fast answer; jsonschema words the refusals

    @property
    def action_names(self) -> list[str]:
        return [a.name for a in self.actions]

    def _build_schema(self) -> JsonObject:
        properties: dict[str, JsonObject] = {}
        if self.actions:
            properties["action"] = {"type": "string", "enum": self.action_names}
        properties.update(self.properties)
        properties.update(self._declared_properties())
        # `action` is checked by dispatch (spec 001's exact texts), so it is not "required" here:
        # a schema-level rejection would answer a missing action with a different message.
        return {"type": "object", "properties": properties, "additionalProperties": False}

    def _declared_properties(self) -> JsonObject:
        """The union of the actions' parameter dataclasses; a name two actions share must mean the same there."""
        declared: JsonObject = {}
        declarations = [self.params, *(a.params for a in self.actions)]
        for params in declarations:
            if params is None:
                continue
            for param in params_rules.params_of(params):
                schema = params_rules.property_schema(param)
                if declared.setdefault(param.name, schema) != schema:
                    raise ValueError(f"{self.name}: parameter {param.name!r} is declared differently by two actions")
        return declared

    def annotations(self) -> types.ToolAnnotations:
        if self.actions:
            read_only = all(a.read_only for a in self.actions)
            destructive = any(a.destructive for a in self.actions)
            idempotent = all(a.idempotent or a.read_only for a in self.actions)
        else:
            read_only, destructive, idempotent = self.read_only, not self.read_only, self.idempotent
        return types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=False if read_only else destructive,
            idempotent_hint=idempotent,
        )

    def to_mcp(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            annotations=self.annotations(),
        )

    def resolve(self, arguments: Mapping[str, Any] | None) -> tuple[Action[Any] | None, JsonObject]:
        """Pick the action and validate the arguments; raise InvalidArgument with spec texts."""
        args = dict(arguments or {})
        action: Action[Any] | None = None
        if self.actions:
            name = args.get("action")
            if name is None or name == "":
                raise InvalidArgument("action parameter is required")
            if not isinstance(name, str) or name not in self._by_action:
                raise InvalidArgument(
                    f"unknown action '{name}' for {self.name} tool; valid actions: {', '.join(self.action_names)}"
                )
            action = self._by_action[name]
        if self._valid is None or not self._valid(args):
            errors = sorted(self._validator.iter_errors(args), key=lambda e: list(e.path))
            if errors:
                raise InvalidArgument(_describe_schema_error(self.name, errors[0]))
        required = action.required if action else self._required
        any_json = action.any_json if action else self._any_json
        missing = [p for p in required if args.get(p) is None or (p not in any_json and args[p] in ("", []))]
        if missing:
            what = f"{self.name} action={action.name}" if action else self.name
            raise InvalidArgument(f"{what} requires {', '.join(repr(m) for m in missing)}")
        return action, args

    def permits(self, principal: Principal, surface: str, action: Action[Any] | None, args: Mapping[str, Any]) -> bool:
        """Whether `principal` may make this call; a `project_id` argument is checked against project-bound scopes."""
        if action is not None and action.self_service and principal.at_console and not action.admin_if_met(args):
            return True
        project = args.get("project_id")
        return principal.may(
            surface,
            self.name,
            action.name if action else None,
            read_only=action.read_only if action else self.read_only,
            admin=action.needs_admin(args) if action else self.admin,
            project=project if isinstance(project, str) else None,
        )

    def callable_by(self, principal: Principal, surface: str) -> bool:
        """Whether `principal` may call at least one action of this tool (on at least one of its projects)."""
        if principal.sees_everything:
            return True
        # A project-bound scope only allows calls naming its project, so ask about those projects too.
        projects: list[str | None] = [None, *principal.bound_projects]
        actions: list[Action[Any] | None] = [*self.actions] or [None]
        return any(
            self.permits(principal, surface, action, {"project_id": project} if project else {})
            for action in actions
            for project in projects
        )

    def needed_scopes(self, surface: str, action: Action[Any] | None, args: Mapping[str, Any]) -> list[str]:
        """Scopes that would permit this call, for a refusal to name."""
        project = args.get("project_id")
        return scope_rules.granting(
            surface,
            self.name,
            action.name if action else None,
            read_only=action.read_only if action else self.read_only,
            admin=action.needs_admin(args) if action else self.admin,
            project=project if isinstance(project, str) else None,
        )

    def refusal(self, principal: Principal, surface: str, action: Action[Any] | None, args: Mapping[str, Any]) -> str:
        """What a refused call is told: the scopes that would allow it, and why when its arguments need `admin`."""
        what = f"{self.name} action={action.name}" if action else self.name
        text = (
            f"your token's scopes ({', '.join(principal.scopes)}) do not allow {what} on the {surface} surface; "
            f"a token with one of these scopes may: {', '.join(self.needed_scopes(surface, action, args))}"
        )
        why = action.why_admin(args) if action else ""
        return f"{text} ({why})" if why else text

    def decide(self, arguments: Mapping[str, Any] | None, principal: Principal, surface: str) -> Decision:
        """The call `principal` makes: its action and arguments, checked against the schema and the scopes."""
        action, args = self.resolve(arguments)
        if not self.permits(principal, surface, action, args):
            raise PermissionDenied(self.refusal(principal, surface, action, args))
        return Decision(surface, self.name, principal, dict(arguments or {}), action, args)

    async def call(
        self, arguments: Mapping[str, Any] | None, principal: Principal, surface: str, decided: Decision | None = None
    ) -> Any:
        """Run the call; `decided` is the HTTP gate's decision on this very call, which spares deciding it again
        (it is used only when it is for this surface, tool, caller and arguments)."""
        if decided is None or not decided.covers(surface, self.name, principal, arguments):
            decided = self.decide(arguments, principal, surface)
        action, args = decided.action, decided.args
        handler = action.handler if action else self.handler
        params = action.params if action else self.params
        assert handler is not None
        return await handler(args if params is None else params_rules.build(params, args), principal)


def _any_json(params: type[Any] | None) -> frozenset[str]:
    return frozenset(p.name for p in params_rules.params_of(params) if p.type == ()) if params else frozenset()


@dataclass(frozen=True)
class Decision:
    """A tools/call decided: permitted for `principal`, with its action picked and its arguments checked."""

    surface: str
    tool: str
    principal: Principal
    arguments: JsonObject  # as the caller sent them
    action: Action[Any] | None
    args: JsonObject

    def covers(self, surface: str, tool: str, principal: Principal, arguments: Mapping[str, Any] | None) -> bool:
        return (
            surface == self.surface
            and tool == self.tool
            and principal == self.principal
            and dict(arguments or {}) == self.arguments
        )


def _describe_schema_error(tool: str, error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.path)
    if error.validator == "additionalProperties":
        allowed = ", ".join(sorted(error.schema.get("properties", {})))  # type: ignore[union-attr]
        return f"{tool}: {error.message}; accepted parameters: {allowed}"
    if where:
        return f"{tool}: parameter '{where}': {error.message}"
    return f"{tool}: {error.message}"


@dataclass
class Surface:
    """A named MCP endpoint exposing a curated set of tools."""

    name: str
    path: str
    tools: Sequence[Tool]
    instructions: str = ""

    def __post_init__(self) -> None:
        self._by_name = {t.name: t for t in self.tools}

    def get(self, name: str) -> Tool:
        tool = self._by_name.get(name)
        if tool is None:
            raise NotFound(f"unknown tool '{name}' on the {self.name} surface; tools: {', '.join(self._by_name)}")
        return tool

    def has(self, name: str) -> bool:
        return name in self._by_name

    def limit_key(self, principal: Principal, name: str, arguments: Mapping[str, Any]) -> str | None:
        """The tool a tools/call of `name` runs, as the rate limiter keys it: the name its own surface gives it,
        whichever surface it is reached through; None for a name that is not a tool here (unknown names share
        one key, so they cannot mint keys)."""
        return name if self.has(name) else None

    def list_mcp(self) -> list[types.Tool]:
        return [t.to_mcp() for t in self.tools]
