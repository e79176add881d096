"""The command line imports what a command uses, and no more (issue 46 item 2).

`jarvis --help` lists the commands of other modules from a table (jarvis.cli.main.LAZY) without importing them: the
table must say what each command's own help says. A read-only command imports the registry's client (and, with no
`jarvis up` serving the data dir, the registry itself), never the MCP SDK, the aggregator's app, the other services, a
model or Alembic once the schema is at its newest revision. How fast that is goes in bench/cli_speed.py, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from jarvis.cli.lazy import LazyGroup
from jarvis.cli.main import LAZY, cli

cli_module = cli.callback.__module__ if cli.callback is not None else ""

# What no command below may import: the MCP SDK, the aggregator's app and surfaces, the other services, the
# embedding model and its runtime, Docker's client, the HTTP server, sign-in's JOSE library.
NEVER = (
    "mcp",
    "jarvis.aggregator.app",
    "jarvis.aggregator.surfaces.jarvis",
    "jarvis.aggregator.discovery",
    "jarvis.runtime",
    "jarvis.scheduler",
    "jarvis.debug",
    "onnxruntime",
    "numpy",
    "tokenizers",
    "docker",
    "uvicorn",
    "starlette",
    "joserfc",
)
# What `jarvis --help` may not import either: no settings, no database, no gRPC.
NOT_FOR_HELP = (*NEVER, "pydantic", "pydantic_settings", "sqlalchemy", "grpc", "alembic", "jarvis.registry")

PROBE = """
import json, sys
from jarvis.cli.main import cli
try:
    cli.main(sys.argv[1:], prog_name="jarvis", standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def imported(*args: str) -> set[str]:
    """The modules a `jarvis` process holds after running `args`."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def offending(modules: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == b or m.startswith(b + ".") for b in banned))


def test_each_lazy_command_is_listed_with_its_own_summary() -> None:
    ctx = click.Context(cli, info_name="jarvis")
    defined_here = {n for n, c in cli.commands.items() if c.callback is None or c.callback.__module__ == cli_module}
    assert defined_here.isdisjoint(LAZY)
    for name, entry in LAZY.items():
        command = entry.load()
        assert command.name == name, f"LAZY[{name!r}] names a command called {command.name!r}"
        assert not command.hidden
        assert entry.summary == command.get_short_help_str(10**6), f"LAZY[{name!r}].summary is stale"
        assert cli.get_command(ctx, name) is command


def test_the_listing_from_the_table_is_the_one_click_makes_from_the_commands() -> None:
    eager = {n: c for n, c in cli.commands.items() if n not in LAZY}
    lazy = LazyGroup("jarvis", commands=dict(eager), lazy=LAZY, params=cli.params, help=cli.help)
    every = {**eager, **{n: e.load() for n, e in LAZY.items()}}
    loaded = click.Group("jarvis", commands=every, params=cli.params, help=cli.help)
    for width in (60, 80, 120):
        listed = lazy.get_help(click.Context(lazy, info_name="jarvis", terminal_width=width))
        assert listed == loaded.get_help(click.Context(loaded, info_name="jarvis", terminal_width=width))
    for incomplete in ("", "o", "cl"):
        completed = lazy.shell_complete(click.Context(lazy, info_name="jarvis"), incomplete)
        expected = loaded.shell_complete(click.Context(loaded, info_name="jarvis"), incomplete)
        assert [(c.value, c.help) for c in completed] == [(c.value, c.help) for c in expected]
    assert lazy.commands == eager  # listing and completing imported none of them


def test_help_imports_no_command_module_settings_database_or_grpc() -> None:
    modules = imported("--help")
    assert offending(modules, NOT_FOR_HELP) == []
    assert sorted({e.module for e in LAZY.values()} & modules) == []


@pytest.mark.parametrize("args", [["status"], ["token", "list"], ["client", "list"]])
def test_a_read_only_command_imports_neither_the_sdk_nor_the_services_nor_a_model(
    args: list[str], tmp_path: Path
) -> None:
    data_dir = ["--data-dir", str(tmp_path / "data")]
    imported(*data_dir, "status")  # the first command makes the schema (with Alembic); the next ones find it made
    modules = imported(*data_dir, *args)
    assert offending(modules, (*NEVER, "alembic")) == []
    assert "jarvis.registry.app" in modules  # nothing serves the data dir: the command opened it itself
