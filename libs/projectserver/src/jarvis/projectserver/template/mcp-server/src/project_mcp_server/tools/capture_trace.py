"""`capture_trace`: a CPU, heap or network snapshot of the application over a short window.

The application runs inside the server process (the `app` setting starts it in a thread), so
the profilers look at it directly:
- cpu: a sampling profiler. Every `INTERVAL` seconds it reads every other thread's current
  stack (`sys._current_frames()`), which neither instruments nor slows the code it watches
  (cProfile would only see the thread that enabled it). A sampler can only look while it holds
  the GIL, which a busy thread gives up every `sys.getswitchinterval()` (5 ms); the interval is
  lowered for the window so pure-Python hot loops are not hidden, then restored. It reports hot
  functions by own and cumulative samples, the hottest stacks, and the process CPU time used.
- heap: `tracemalloc` snapshots at the start and end of the window, diffed by source line.
- network: per-connection counters from `/proc` and `TCP_INFO` (see `procnet`).
"""

from __future__ import annotations

import collections
import sys
import threading
import time
import tracemalloc
from types import FrameType
from typing import Any

from project_mcp_server.config import ServerConfig
from project_mcp_server.tools import procnet
from project_mcp_server.tools.base import ToolDef, builtin

INTERVAL = 0.005
SWITCH_INTERVAL = 0.0005
TOP = 20


def _label(config: ServerConfig, frame: FrameType) -> str:
    code = frame.f_code
    file = code.co_filename
    if file.startswith(str(config.root)):
        file = file[len(str(config.root)) + 1 :]
    return f"{code.co_name} ({file}:{code.co_firstlineno})"


def _stack(config: ServerConfig, frame: FrameType | None) -> list[str]:
    """Function labels of a stack, outermost first."""
    labels: list[str] = []
    while frame is not None:
        labels.append(_label(config, frame))
        frame = frame.f_back
    labels.reverse()
    return labels


def cpu(config: ServerConfig, seconds: float) -> dict[str, Any]:
    """Sample every thread but the server's own for `seconds`."""
    me = threading.get_ident()
    server = threading.main_thread().ident  # the event loop answering MCP; not the application
    names = {t.ident: t.name for t in threading.enumerate()}
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    stacks: collections.Counter[str] = collections.Counter()
    per_thread: collections.Counter[str] = collections.Counter()
    samples = 0
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        cpu_before, deadline = time.process_time(), time.monotonic() + seconds
        while time.monotonic() < deadline:
            for ident, frame in sys._current_frames().items():
                if ident in (me, server) or names.get(ident, "").startswith("AnyIO worker"):
                    continue
                stack = _stack(config, frame)
                samples += 1
                per_thread[names.get(ident, str(ident))] += 1
                own[stack[-1]] += 1
                total.update(set(stack))
                stacks[";".join(stack[-8:])] += 1
            time.sleep(INTERVAL)
        cpu_used = time.process_time() - cpu_before
    finally:
        sys.setswitchinterval(switch_interval)

    def top(counter: collections.Counter[str]) -> list[dict[str, Any]]:
        return [
            {"function": fn, "samples": n, "percent": round(100 * n / samples, 1)} for fn, n in counter.most_common(TOP)
        ]

    return {
        "type": "cpu",
        "interval_ms": INTERVAL * 1000,
        "samples": samples,
        "threads": dict(per_thread),
        "process_cpu_seconds": round(cpu_used, 4),
        "top_self": top(own),
        "top_cumulative": top(total),
        "hot_stacks": [{"stack": s, "samples": n} for s, n in stacks.most_common(10)],
    }


def heap(config: ServerConfig, seconds: float) -> dict[str, Any]:
    """Allocations made during the window, by source line (tracemalloc)."""
    started_here = not tracemalloc.is_tracing()
    if started_here:
        tracemalloc.start(10)
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)]
    try:
        before = tracemalloc.take_snapshot().filter_traces(ignore)
        rss_before = procnet.rss_kib()
        time.sleep(seconds)
        after = tracemalloc.take_snapshot().filter_traces(ignore)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        if started_here:
            tracemalloc.stop()
    diff = [d for d in after.compare_to(before, "lineno") if d.size_diff or d.count_diff][:TOP]
    root = str(config.root)
    return {
        "type": "heap",
        "traced_current_bytes": current,
        "traced_peak_bytes": peak,
        "rss_kib_before": rss_before,
        "rss_kib_after": procnet.rss_kib(),
        "note": "tracing started for this window only" if started_here else "tracing was already on",
        "top_growth": [
            {
                "location": f"{str(d.traceback[0].filename).removeprefix(root + '/')}:{d.traceback[0].lineno}",
                "size_diff_bytes": d.size_diff,
                "count_diff": d.count_diff,
                "size_bytes": d.size,
            }
            for d in diff
        ],
    }


def capture(config: ServerConfig, duration_ms: int, kind: str) -> dict[str, Any]:
    """Dispatch to the profiler for `kind` and stamp the window length."""
    seconds = duration_ms / 1000
    profile = {"cpu": cpu, "heap": heap, "network": procnet.network}[kind](config, seconds)
    return {**profile, "duration_ms": duration_ms}


def tool(config: ServerConfig) -> ToolDef:
    """The `capture_trace` tool for the application hosted in this process."""
    return builtin("capture_trace", lambda args: capture(config, args["duration_ms"], args["type"]), read_only=True)
