"""A click group whose subcommands are imported when one runs: `jarvis --help` and a command reading one record
pay only for the modules they use (issue 46 item 2).

The group lists each lazy command with the one-line summary its table gives, without importing it;
tests/unit/common/test_cli_lazy.py checks every summary against the command's own help.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives (`module`, its `attribute`) and the summary `jarvis --help` shows for it."""

    module: str
    attribute: str
    summary: str

    def load(self) -> click.Command:
        command = getattr(importlib.import_module(self.module), self.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.module}.{self.attribute} is not a click command")
        return command


class LazyGroup(click.Group):
    """A group with eager commands (defined with it) and lazy ones (`lazy`: name -> where it lives)."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.lazy[cmd_name].load(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def summary_command(self, name: str) -> click.Command | None:
        """The command as the help listing needs it: itself once loaded, else a stand-in with its summary."""
        if name in self.commands:
            return self.commands[name]
        entry = self.lazy.get(name)
        return click.Command(name, help=entry.summary) if entry is not None else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's own listing, with the summaries of commands not imported yet taken from the table."""
        commands = [(n, c) for n in self.list_commands(ctx) if (c := self.summary_command(n)) and not c.hidden]
        if not commands:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in commands)
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in commands])

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Completing a command name imports none of them."""
        from click.shell_completion import CompletionItem

        names = [n for n in self.list_commands(ctx) if n.startswith(incomplete)]
        results = [
            CompletionItem(n, help=c.get_short_help_str())
            for n in names
            if (c := self.summary_command(n)) is not None and not c.hidden
        ]
        results.extend(click.Command.shell_complete(self, ctx, incomplete))
        return results
