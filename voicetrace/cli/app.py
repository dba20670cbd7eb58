"""The typer app, the two consoles, and ``main``: the one place a UserError becomes an exit code."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from voicetrace.errors import EXIT_SIGINT, UserError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Where every millisecond of a voice agent's reply goes.",
    pretty_exceptions_enable=False,
)
# Off a terminal (CI logs, pipes) rich assumes 80 columns, too narrow for the turn table.
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True)


def print_error(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)


def print_warning(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)


def main() -> None:
    try:
        app()
    except UserError as exc:
        print_error(exc.message)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(EXIT_SIGINT)
