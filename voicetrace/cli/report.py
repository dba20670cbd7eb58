"""``voicetrace report``: terminal summary, --json and the HTML file (-o), from trace files, run folders
or Jaeger — one pipeline for all; and the report ``run`` prints at its end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from voicetrace.cli.app import app, console, err_console
from voicetrace.cli.inputs import build, build_from_jaeger
from voicetrace.errors import InputError, UsageError


@app.command()
def report(
    traces: Optional[List[Path]] = typer.Argument(None, help="trace.jsonl files or run folders."),
    jaeger: Optional[str] = typer.Option(None, "--jaeger", help="Read the spans from Jaeger's query API instead: http://HOST:16686."),
    service: Optional[str] = typer.Option(None, "--service", help="With --jaeger: the service.name whose traces to read."),
    since: str = typer.Option("1h", "--since", help="With --jaeger: how far back to look (30m, 1h, 2d)."),
    trace_id: Optional[List[str]] = typer.Option(None, "--trace-id", help="With --jaeger: read this trace only (repeatable)."),
    limit: int = typer.Option(20, "--limit", help="With --jaeger: at most this many traces, newest first."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Also write one self-contained HTML report (opens offline)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary and every turn as JSON instead of tables."),
    budget_ms: float = typer.Option(1000.0, "--budget-ms", help="V2V budget for voice goodput (share of turns within it)."),
    gguf: Optional[Path] = typer.Option(None, "--gguf", help="Model file whose header gives the KV-cache shape (default: the run's embedded model)."),
    model_shape: Optional[str] = typer.Option(None, "--model-shape", help="KV-cache shape instead of --gguf: LAYERS,KV_HEADS,HEAD_DIM[,BYTES_PER_VALUE]."),
) -> None:
    """Per-turn latency table and percentiles from recorded spans (docs/DESIGN.md metric definitions)."""
    if jaeger and traces:
        raise UsageError("give trace files or --jaeger, not both")
    if not jaeger and not traces:
        raise UsageError("give trace files or run folders, or --jaeger http://HOST:16686 --service NAME")
    if jaeger:
        built = build_from_jaeger(jaeger, service, since, trace_id, limit, budget_ms, gguf, model_shape)
    else:
        built = build(list(traces), budget_ms, gguf, model_shape)
    report_command(built, console, err_console, output=output, as_json=as_json)


def write_output(output: Path, render, subject) -> int:
    """``render(subject, handle)`` into ``output`` (folders made); its size. A write that fails is one line."""
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(output, "w", encoding="utf-8") as handle:
            render(subject, handle)
    except OSError as exc:
        raise InputError(f"{output}: {exc.strerror}") from None
    return output.stat().st_size


def report_command(report, console: Console, err_console: Console, output: Path | None = None,
                   as_json: bool = False) -> None:
    """Print a built Report (terminal or --json) and write its HTML when asked."""
    print_report(report, console, err_console, as_json)
    if output is not None:
        from voicetrace.render import renderer

        size = write_output(output, renderer("html"), report)
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
    raises a UserError (one line, exit code) when the folder can't be read."""
    report = build([Path(run_folder)])
    print_report(report, console, err_console or console)
    return report
