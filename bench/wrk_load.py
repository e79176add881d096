"""Load from `wrk`, the C load generator, replaying the SDK client's captured requests.

`bench/replay.py`'s Python client costs ~140 us of CPU per call, on the same two cores as the servers it
measures: a third of what a Jarvis worker spends on a call. Bare single-process servers leave it a core
of its own; several workers do not, so the client's CPU decided how far they could scale. wrk costs a
few microseconds per call. Here each simulated client's session is opened by the SDK's client as in
`replay.py` (the 2025 handshake, or a 2026-07-28 request's `_meta` and `Mcp-*` headers); wrk (one thread,
one keep-alive connection per client) sends the captured requests in turn, each with a fresh JSON-RPC id,
and a Lua `response` hook counts every answer that is not HTTP 200 with a result that is not a tool error.
The latency histogram comes back from wrk's `done` hook, microsecond by microsecond (its populated buckets).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from common import LoadResult
from replay import CapturedCall

_SCRIPT = """
local sessions = %(sessions)s
local counter = 0
errors = 0
request = function()
  counter = counter + 1
  local s = sessions[(counter %% #sessions) + 1]
  return wrk.format("POST", s.path, s.headers, s.before .. counter .. s.after)
end
response = function(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true) or string.find(body, '"isError":true', 1, true) then
    errors = errors + 1
  end
end
local threads = {}
setup = function(thread) table.insert(threads, thread) end
done = function(summary, latency, requests)
  local failed = 0
  for _, t in ipairs(threads) do failed = failed + t:get("errors") end
  io.write(string.format("RESULT %%d %%f %%d\\n", summary.requests, summary.duration / 1e6, failed))
  for i = 1, #latency do
    local us, n = latency(i)
    io.write(string.format("LAT %%d %%d\\n", us, n))
  end
end
"""


def _lua_string(text: str | bytes) -> str:
    raw = text.decode() if isinstance(text, bytes) else text
    return json.dumps(raw)  # a JSON string literal is a valid Lua string literal for this ASCII text


def _script(calls: list[CapturedCall]) -> str:
    entries = []
    for call in calls:
        template = call.template()
        headers = ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in call.headers.items())
        entries.append(
            f"{{path = {_lua_string(call.path)}, headers = {{{headers}}}, "
            f"before = {_lua_string(template.before_id)}, after = {_lua_string(template.after_id)}}}"
        )
    return _SCRIPT % {"sessions": "{" + ", ".join(entries) + "}"}


def wrk_load(label: str, calls: list[CapturedCall], seconds: float) -> LoadResult:
    """`len(calls)` clients for `seconds`: calls/s, every latency, and how many answers were wrong."""
    binary = shutil.which("wrk")
    if binary is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk)")
    first = calls[0]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "replay.lua"
        script.write_text(_script(calls))
        out = subprocess.run(
            [
                binary,
                "-t1",
                f"-c{len(calls)}",
                f"-d{seconds:g}s",
                "--latency",
                "--timeout",
                "10s",
                "-s",
                str(script),
                f"http://{first.host}:{first.port}{first.path}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    latencies: list[float] = []
    total, elapsed, errors = 0, 0.0, 0
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["RESULT"]:
            total, elapsed, errors = int(parts[1]), float(parts[2]), int(parts[3])
        elif parts[:1] == ["LAT"]:
            latencies += [int(parts[1]) / 1000] * int(parts[2])
    if not total:
        raise RuntimeError(f"wrk reported nothing:\n{out}")
    return LoadResult(label, total, errors, elapsed, latencies)
