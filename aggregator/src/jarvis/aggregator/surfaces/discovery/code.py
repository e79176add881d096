"""`code_run` (issue 35): the caller's program runs in the sandbox, and each tool it calls is a call by the caller.

The program names a tool and arguments, nothing more. Who calls is the principal the gate resolved for this
`code_run`, so every inner call is resolved, scoped, rate limited, pinned or quarantined, and audited exactly as
the same caller's `tool_call` would be; the audit names the run ("via code run R").
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Annotated, Any

import mcp_types as types

from jarvis.aggregator.codemode.bridge import CallRecord, RunResult, run_code
from jarvis.aggregator.codemode.limits import CodePolicy, RunError, RunLimits, ScopeLimits
from jarvis.aggregator.codemode.runner import SandboxPool
from jarvis.aggregator.discovery.access import DOWNSTREAM_SCOPE
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.aggregator.surfaces.discovery.state import Discovery, current_caller, shown
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.errors import FailedPrecondition, JarvisError, PermissionDenied
from jarvis.common.params import Arg
from jarvis.common.scopes import ADMIN, READ

log = logging.getLogger(__name__)
CODE_RUN = "code_run"
# tool_find for a program: its arguments as the program gave them, checked as a direct call's are.
FindFn = Callable[[dict[str, Any], Principal], Awaitable[Any]]


@dataclass(frozen=True)
class Code:
    code: Annotated[str | None, Arg("TypeScript: await tools.<name>(args); return x")] = None
    timeout: Annotated[int | None, Arg("seconds", minimum=1, maximum=600)] = None


@dataclass(frozen=True)
class ToolCalls:
    """A program's calls to one tool. One line per tool, not per call: the model reads what it needs to act on
    (what was called, how often, how long, what failed and why), and a line per call would bring back into its
    context the bulk that code mode keeps out of it."""

    name: str
    count: int
    ms: float  # the calls' durations added up
    errors: list[str] | None = None  # each failed call's error, in the order they failed


def calls_by_tool(records: Iterable[CallRecord]) -> list[ToolCalls]:
    """The run's calls grouped by tool, in the order the program first called each."""
    grouped: dict[str, list[CallRecord]] = {}
    for record in records:
        grouped.setdefault(record.name, []).append(record)
    return [
        ToolCalls(
            name,
            len(calls),
            round(sum(c.ms for c in calls), 3),
            [c.error or "failed" for c in calls if not c.ok] or None,
        )
        for name, calls in grouped.items()
    ]


@dataclass(frozen=True)
class CodeAnswer:
    result: Any
    calls: list[ToolCalls]
    console: str | None = None
    console_truncated: int | None = None  # characters of console output past the bound, dropped


def value_of(result: types.CallToolResult) -> Any:
    """What `await tools.x(...)` gives the program: the structured result, else the text (parsed when JSON)."""
    if result.structured_content is not None:
        return result.structured_content
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    text = "\n".join(texts)
    try:
        return json.loads(text)
    except ValueError:
        return text


class CallerHost:
    """The Jarvis side of one run's calls: every call decided for `principal`, never for what the program says."""

    def __init__(self, d: Discovery, principal: Principal, run_id: str, find: FindFn) -> None:
        self.d = d
        self.principal = principal
        # The audit's caller is the same token or person, with the run its calls came from ("alice via code run R
        # (token C)", "ci via code run R").
        via = f"code run {run_id}" + (f" ({principal.via})" if principal.via else "")
        self.audited = replace(principal, via=via)
        self._find = find
        self.caller = current_caller()
        self.done = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        outcome = "error"
        try:
            # The pipeline decides it as on any door: scopes, the token's rate and calls in flight, consent.
            entry = self.d.resolve(name, self.principal, to_call=True)
            result = await self.d.call(entry, arguments, self.audited)
            if result.is_error:
                raise RunError(f"{shown(name)}: {value_of(result)}")
            outcome = "ok"
            return value_of(result)
        except JarvisError as exc:
            raise RunError(str(exc)) from None
        finally:
            await self._progress(f"{shown(name)}: {outcome}")

    async def _progress(self, message: str) -> None:
        """One progress notification per inner call, when the caller asked for progress."""
        self.done += 1
        try:
            await self.caller.report_progress(self.done, None, message)
        except Exception:  # the caller gone or its stream closed: the run's answer says the rest
            log.debug("progress not delivered", exc_info=True)

    async def find(self, arguments: dict[str, Any]) -> Any:
        try:
            return await self._find(arguments, self.principal)
        except JarvisError as exc:
            raise RunError(str(exc)) from None


class CodeMode:
    """`code_run`'s handler over one aggregator's discovery state and its pool of warm sandboxes."""

    def __init__(self, d: Discovery, find: FindFn) -> None:
        self.d = d
        self.find = find
        self._pool: SandboxPool | None = None

    def pool(self) -> SandboxPool:
        # Started on first use, inside the serving event loop; its processes live only as long as the aggregator.
        if self._pool is None:
            self._pool = SandboxPool(self.d.code_policy.defaults)
            self.d.on_stop(self._pool.close)
        return self._pool

    async def run(self, p: Code, principal: Principal) -> CodeAnswer:
        limits = run_limits(self.d, principal)
        run_id = uuid.uuid4().hex[:12]
        host = CallerHost(self.d, principal, run_id, self.find)
        try:
            done: RunResult = await run_code(self.pool(), p.code or "", host, p.timeout, limits)
        except RunError as exc:
            where = f" (line {exc.line}, column {exc.column})" if exc.line is not None else ""
            raise FailedPrecondition(f"code run {run_id}: {exc}{where}") from None
        return CodeAnswer(
            result=done.value,
            calls=calls_by_tool(done.calls),
            console=done.console or None,
            console_truncated=done.console_dropped or None,
        )


def granting_scopes(d: Discovery, principal: Principal) -> tuple[str, ...]:
    """The caller's scopes that each, on its own, let a program call a tool. One that reaches none (`metrics`, a
    share's `share:<server>`, a profile's) gives a program nothing to do but burn the host's CPU, so it lets none
    run."""
    return tuple(s for s in principal.scopes if d.reaches_a_tool(replace(principal, scopes=(s,))))


def run_limits(d: Discovery, principal: Principal) -> RunLimits:
    """The caller's limits for a run; PermissionDenied saying why when it may not run one here."""
    granting = granting_scopes(d, principal)
    if not granting:
        raise PermissionDenied(
            f"code_run runs a program that calls tools, and your token's scopes ({', '.join(principal.scopes)}) "
            f"allow calling none; a token with a scope that reaches a tool may, e.g. '{READ}', 'jarvis', "
            f"'{DOWNSTREAM_SCOPE}:<server>' or '{ADMIN}'"
        )
    limits = d.code_policy.limits_for(granting)
    if limits is None:
        raise PermissionDenied("code_run is turned off for your token on this Jarvis; call tools with tool_call")
    return limits


def may_run_code(d: Discovery, principal: Principal) -> bool:
    """Whether the caller's tools/list shows code_run: only where calling it would not be refused."""
    try:
        run_limits(d, principal)
    except PermissionDenied:
        return False
    return True


def code_policy(settings: AggregatorSettings) -> CodePolicy:
    """code_run's policy from the aggregator's settings (code_mode, code_mode_max_timeout, code_mode_roles)."""
    defaults = RunLimits(max_timeout=settings.code_mode_max_timeout)
    per_scope = tuple(
        (scope, ScopeLimits(role.enabled, role.calls, role.concurrent, role.timeout))
        for scope, role in settings.code_mode_roles.items()
    )
    return CodePolicy(settings.code_mode, defaults, per_scope)
