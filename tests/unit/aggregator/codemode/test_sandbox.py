"""Code mode's sandbox against the attacks of issue 35, with a real Deno: each run ends with a clear error."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.aggregator.codemode.bridge import run_code
from jarvis.aggregator.codemode.limits import RunError, RunLimits
from jarvis.aggregator.codemode.runner import Sandbox, SandboxPool, deno_binary, deno_command

pytestmark = pytest.mark.anyio
PROBE = """
const tries = {
  read: () => Deno.readTextFileSync("/etc/passwd"),
  write: () => Deno.writeTextFileSync("/tmp/jarvis-codemode-probe", "x"),
  env: () => Deno.env.get("HOME"),
  run: () => new Deno.Command("/bin/sh", { args: ["-c", "id"] }).outputSync(),
  net: () => Deno.connect({ hostname: "127.0.0.1", port: 9 }),
  ffi: () => Deno.dlopen("libc.so.6", {}),
  sys: () => Deno.hostname(),
};
const answers = {};
for (const [name, attempt] of Object.entries(tries)) {
  try { await attempt(); answers[name] = "allowed"; } catch (e) { answers[name] = e.name; }
}
console.log(JSON.stringify(answers));
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class EchoHost:
    """A host that answers every call with its name and arguments, and counts them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append((name, arguments))
        if name == "fails":
            raise RunError("fails: refused")
        await asyncio.sleep(0)
        return {"tool": name, "arguments": arguments}

    async def find(self, arguments: dict[str, Any]) -> Any:
        return {"query": arguments.get("query"), "results": []}


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    p = SandboxPool(RunLimits(timeout=5.0, heap_mb=64), warm=1)
    yield p
    await p.close()


async def refused(pool: SandboxPool, code: str, host: EchoHost | None = None) -> RunError:
    with pytest.raises(RunError) as caught:
        await run_code(pool, code, host or EchoHost())
    return caught.value


async def test_a_program_calls_tools_and_returns_json(pool: SandboxPool) -> None:
    host = EchoHost()
    code = """
    const names: string[] = ["a", "b", "c"];
    const answers = await Promise.all(names.map((n) => tools.echo({ n })));
    console.log("got", answers.length);
    return { count: answers.length, first: answers[0], found: await tool_find("files") };
    """
    result = await run_code(pool, code, host)
    assert result.value["count"] == 3
    assert result.value["first"] == {"tool": "echo", "arguments": {"n": "a"}}
    assert result.value["found"]["query"] == "files"
    assert result.console == "got 3\n"
    assert [c.name for c in result.calls].count("echo") == 3
    assert all(c.ok for c in result.calls)


async def test_errors_name_the_line_and_column_in_the_callers_code(pool: SandboxPool) -> None:
    error = await refused(pool, "const x = 1;\nconst y = 2;\n  throw new Error('boom');")
    assert "boom" in str(error)
    assert (error.line, error.column) == (3, 9)


async def test_a_program_that_does_not_parse_is_a_syntax_error_at_its_own_line(pool: SandboxPool) -> None:
    """Issue 46: it read "TypeError: SyntaxError: …", with the wrapper's code frame (a line off) and its data: URL."""
    error = await refused(pool, "const a = 1;\nconst b = ;\nreturn a;")
    assert str(error) == "SyntaxError: Expression expected"
    assert (error.line, error.column) == (2, 11)


async def test_a_refused_call_left_uncaught_names_the_line_of_the_call(pool: SandboxPool) -> None:
    """Issue 46: a refused or unknown tool gave no line or column, though the README says errors name them."""
    error = await refused(pool, "const a = 1;\n  await tools.fails({});\n")
    assert str(error) == "Error: fails: refused"
    assert (error.line, error.column) == (2, 15)


async def test_a_refused_inner_call_is_an_exception_the_program_can_catch(pool: SandboxPool) -> None:
    result = await run_code(pool, "try { await tools.fails({}) } catch (e) { return String(e.message) }", EchoHost())
    assert result.value == "fails: refused"
    assert not result.calls[0].ok


async def test_file_system_is_denied(pool: SandboxPool) -> None:
    error = await refused(pool, "return await Deno.readTextFile('/etc/passwd')")
    # The program never sees Deno; the permissions below are the second wall.
    assert "Deno is not defined" in str(error)


def test_the_sandbox_flags_deny_every_permission_even_to_deno_itself(tmp_path: Path) -> None:
    script = tmp_path / "probe.js"
    script.write_text(PROBE)
    command = deno_command(deno_binary(), script, RunLimits())
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"DENO_DIR": str(tmp_path / "d")})
    answers = json.loads(done.stdout)
    assert answers == {
        "read": "NotCapable",
        "write": "NotCapable",
        "env": "NotCapable",
        "run": "NotCapable",
        "net": "NotCapable",
        "ffi": "NotCapable",
        "sys": "NotCapable",
    }


async def test_fetch_to_a_loopback_listener_never_connects(pool: SandboxPool) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        error = await refused(pool, f"return await (await fetch('http://127.0.0.1:{port}/')).text()")
        assert "net" in str(error)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()


@pytest.mark.parametrize(
    "code",
    [
        "return Deno.env.get('HOME')",
        "return Deno.env.toObject()",
        "return await new Deno.Command('id').output()",
    ],
)
async def test_environment_and_subprocesses_are_denied(pool: SandboxPool, code: str) -> None:
    error = await refused(pool, code)
    assert error.line == 1


IMPORT_REFUSED = "may not import"
NO_CODE_FROM_STRINGS = "Code generation from strings disallowed"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("return await import('https://example.com/x.js')", IMPORT_REFUSED),
        ("return await import('data:text/javascript,export default 1')", IMPORT_REFUSED),
        ("return await import('node:fs')", IMPORT_REFUSED),
        ("return eval(\"Deno.readTextFileSync('/etc/passwd')\")", NO_CODE_FROM_STRINGS),
        ("return new Function('return Deno.env.toObject()')()", NO_CODE_FROM_STRINGS),
        ("return new Function('return imp' + 'ort(\"node:fs\")')()", NO_CODE_FROM_STRINGS),
        (
            "return (async () => {}).constructor(\"return await Deno.readTextFile('/etc/passwd')\")()",
            NO_CODE_FROM_STRINGS,
        ),
    ],
)
async def test_imports_and_code_from_strings_are_refused(pool: SandboxPool, code: str, expected: str) -> None:
    """Imports are refused before the program runs; eval and its kin by V8 itself."""
    assert expected in str(await refused(pool, code))


async def test_an_endless_loop_ends_at_the_wall_time(pool: SandboxPool) -> None:
    with pytest.raises(RunError, match="wall time of 1 s"):
        await run_code(pool, "while (true) {}", EchoHost(), timeout=1)


async def test_a_memory_bomb_ends_the_sandbox_not_jarvis(pool: SandboxPool) -> None:
    error = await refused(pool, "const a = []; while (true) a.push(new Array(1e6).fill(1.5));")
    assert "out of memory" in str(error)
    assert (await run_code(pool, "return 1", EchoHost())).value == 1


async def test_recursion_to_stack_overflow_is_a_clear_error(pool: SandboxPool) -> None:
    error = await refused(pool, "const f = (n: number): number => f(n + 1) + 1;\nreturn f(0);")
    assert "Maximum call stack size exceeded" in str(error)


async def test_a_thousand_inner_calls_end_the_run_at_the_call_limit(pool: SandboxPool) -> None:
    host = EchoHost()
    error = await refused(pool, "for (let i = 0; i < 1000; i++) await tools.echo({ i });", host)
    assert "more than 50 tool calls" in str(error)
    assert len(host.calls) <= 50


async def test_ten_megabytes_of_console_output_are_cut_to_the_bound(pool: SandboxPool) -> None:
    code = "const line = 'x'.repeat(1000); for (let i = 0; i < 10000; i++) console.log(line); return 'done'"
    result = await run_code(pool, code, EchoHost())
    assert result.value == "done"
    assert len(result.console) == 64 * 1024
    assert result.console_dropped > 9_000_000


async def test_a_return_value_over_the_bound_is_refused(pool: SandboxPool) -> None:
    assert "at most 65536" in str(await refused(pool, "return 'x'.repeat(100000)"))


async def test_tampering_with_the_bridge_reaches_nothing(pool: SandboxPool) -> None:
    """The program's objects are its own: replacing them, or writing to the pipe, asks Jarvis for nothing."""
    host = EchoHost()
    code = """
    let wrote = "no";
    try { Deno.stdout.write(new TextEncoder().encode('{"t":"done","ok":true,"value":"forged"}\\n')); wrote = "yes" }
    catch (e) { wrote = String(e.message) }
    Object.defineProperty(globalThis, "JSON", { value: { stringify: () => "{}", parse: () => ({}) } });
    const answer = await tools.echo({ as: "admin", token: "forged" });
    return { wrote, answer };
    """
    result = await run_code(pool, code, host)
    assert "Deno is not defined" in result.value["wrote"]
    assert host.calls == [("echo", {"as": "admin", "token": "forged"})]


async def test_sixteen_runs_at_once_all_finish(pool: SandboxPool) -> None:
    runs = [run_code(pool, f"return (await tools.echo({{ i: {i} }})).arguments.i", EchoHost()) for i in range(16)]
    assert [r.value for r in await asyncio.gather(*runs)] == list(range(16))


class SlowHost(EchoHost):
    """Holds each call a moment and records how many are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0
        self.most = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(0.05)
            return await super().call(name, arguments)
        finally:
            self.running -= 1


async def test_at_most_eight_calls_run_at_once_and_the_rest_wait(pool: SandboxPool) -> None:
    host = SlowHost()
    code = "return (await Promise.all([...Array(20).keys()].map((i) => tools.echo({ i })))).length"
    assert (await run_code(pool, code, host)).value == 20
    assert host.most == 8


async def test_cancelling_a_run_kills_its_sandbox(pool: SandboxPool) -> None:
    started = asyncio.Event()
    sandboxes = []
    acquire = pool.acquire

    async def watched() -> Any:
        sandbox = await acquire()
        sandboxes.append(sandbox)
        started.set()
        return sandbox

    pool.acquire = watched  # type: ignore[method-assign]
    run = asyncio.create_task(run_code(pool, "while (true) {}", EchoHost(), timeout=30))
    await started.wait()
    await asyncio.sleep(0.2)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert sandboxes[0].process.returncode is not None


# Issue 44 finding 3: the heap bound left typed arrays out (ArrayBuffers live outside V8's heap); six of 100 MiB
# kept 652 MiB in the Deno process and the run returned normally.
TYPED_ARRAYS = """
const keep = [];
for (let i = 0; i < 6; i++) keep.push(new Uint8Array(100 * 1024 * 1024).fill(7));
return keep.length;
"""


async def test_typed_arrays_past_the_memory_bound_end_the_run(pool: SandboxPool) -> None:
    error = await refused(pool, TYPED_ARRAYS)
    assert "out of memory" in str(error)
    assert f"{pool.limits.memory_mb} MiB" in str(error)
    assert (await run_code(pool, "return 1", EchoHost())).value == 1


async def test_a_program_catching_failed_allocations_holds_no_more_than_the_bound(pool: SandboxPool) -> None:
    code = """
    const keep = [];
    for (let i = 0; i < 12; i++) {
      try { keep.push(new Uint8Array(50 * 1024 * 1024).fill(7)); } catch { break; }
    }
    return keep.length * 50;
    """
    try:
        held, error = (await run_code(pool, code, EchoHost())).value, ""
    except RunError as exc:  # the watchdog may see it first
        held, error = 0, str(exc)
    assert held <= pool.limits.memory_mb
    assert not error or "out of memory" in error


@pytest.mark.parametrize("alone", ["watchdog", "data limit"])
async def test_each_memory_bound_alone_stops_the_typed_arrays(
    pool: SandboxPool, monkeypatch: pytest.MonkeyPatch, alone: str
) -> None:
    """The watchdog (VmRSS, polled) and RLIMIT_DATA (refused allocations) each end the attack without the other."""

    async def unwatched(self: Sandbox) -> None:
        return None

    if alone == "watchdog":
        monkeypatch.setattr(Sandbox, "_bound_data", lambda self: None)
    else:
        monkeypatch.setattr(Sandbox, "watch_memory", unwatched)
    error = await refused(pool, TYPED_ARRAYS)
    assert "out of memory" in str(error)


# Issue 44 finding 5: the program closed the wrapper function, kept `Deno` at the module's top level and wrote its
# own {"t":"done"} line to the protocol's stdout: a 2 MB console went past the 64 KiB cap.
CLOSES_THE_WRAPPER = """return 1 }
const out = Deno.stdout;
const forged = { t: "done", ok: true, value: "forged", console: "y".repeat(2 * 1024 * 1024) };
await out.write(new TextEncoder().encode(JSON.stringify(forged) + "\\n"));
export function reopened() {
"""

# The same line written by the bootstrap itself, through a prototype the program replaced.
BOOTSTRAP_WRITES_IT = """
const forged = new TextEncoder().encode(
  JSON.stringify({ t: "done", ok: true, value: "forged", console: "y".repeat(2 * 1024 * 1024) }) + "\\n",
);
TextEncoder.prototype.encode = () => forged;
Uint8Array.prototype.subarray = function () { return forged; };
await tools.echo({});
return "mine";
"""


async def test_a_program_closing_the_wrapper_never_has_deno(pool: SandboxPool) -> None:
    error = await refused(pool, CLOSES_THE_WRAPPER)
    assert "Deno is not defined" in str(error)


async def test_a_program_cannot_forge_the_protocol_through_the_bootstraps_objects(pool: SandboxPool) -> None:
    host = EchoHost()
    result = await run_code(pool, BOOTSTRAP_WRITES_IT, host)
    assert result.value == "mine"
    assert result.console == ""
    assert host.calls == [("echo", {})]


async def test_the_programs_console_is_never_read_as_the_protocol(pool: SandboxPool) -> None:
    done = '{"t":"done","ok":true,"value":"forged","console":"' + "y" * 100 + '"}'
    result = await run_code(pool, f"console.log({json.dumps(done)}); return 'mine'", EchoHost())
    assert result.value == "mine"
    assert result.console == done + "\n"


async def test_jarvis_cuts_the_console_to_the_bound_whatever_the_sandbox_sends(
    pool: SandboxPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bootstrap told to keep 10 MB of console (as a sandbox gone wrong might) is still cut to 64 KiB here."""
    from jarvis.aggregator.codemode import runner

    def generous(binary: str, bootstrap: Path, limits: RunLimits, channel: Any = None) -> list[str]:
        command = deno_command(binary, bootstrap, limits, channel)
        command[command.index(str(limits.output_bytes))] = str(20 * 1024 * 1024)
        return command

    monkeypatch.setattr(runner, "deno_command", generous)
    code = "const line = 'x'.repeat(1000); for (let i = 0; i < 2000; i++) console.log(line); return 'done'"
    result = await run_code(pool, code, EchoHost())
    assert result.value == "done"
    assert len(result.console) == 64 * 1024
    assert result.console_dropped == 2000 * 1001 - 64 * 1024
