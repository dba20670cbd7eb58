"""``voicetrace report``: terminal summary, --json, and the HTML file (-o); and the report ``run`` prints."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from voicetrace.commands import EXIT_INPUT, CommandError
from voicetrace.commands.inputs import build


def write_html(report, output: Path) -> int:
    from voicetrace.render import renderer

    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(output, "w", encoding="utf-8") as handle:
            renderer("html")(report, handle)
    except OSError as exc:
        raise CommandError(f"{output}: {exc.strerror}", EXIT_INPUT) from None
    return output.stat().st_size


def report_command(paths: list[Path], console: Console, err_console: Console, output: Path | None = None,
                   as_json: bool = False, budget_ms: float = 1000.0, gguf: Path | None = None,
                   model_shape: str | None = None, report=None) -> None:
    """``report`` may be given ready-made (e.g. from Jaeger); otherwise it is built from ``paths``."""
    if report is None:
        report = build(paths, budget_ms, gguf, model_shape)
    print_report(report, console, err_console, as_json)
    if output is not None:
        size = write_html(report, output)
        (err_console if as_json else console).print(
            f"wrote {output} ({size / 2**20:.1f} MB, opens offline)", highlight=False, soft_wrap=True)


def print_report(report, console: Console, err_console: Console, as_json: bool = False) -> None:
    from voicetrace.render import renderer

    if as_json:
        renderer("json")(report, sys.stdout)
    else:
        renderer("terminal")(report, console.file)
    if report.tables.skipped:  # where: file:line and why, so the user can look
        err_console.print(f"[yellow]warning:[/] {report.tables.skipped_note()}", highlight=False, soft_wrap=True)


def print_run_report(run_folder: Path, console: Console, err_console: Console | None = None):
    """What ``run`` prints at its end: exactly ``voicetrace report RUN_FOLDER``. Returns the Report;
    raises CommandError (one line, exit code) when the folder can't be read."""
    report = build([Path(run_folder)])
    print_report(report, console, err_console or console)
    return report
