"""``diff``, ``check`` and ``whatif``: print what the analysis functions return."""

from __future__ import annotations

import math
from pathlib import Path
from typing import List, Optional

import typer

from rich.console import Console
from rich.table import Table

from voicetrace.cli.app import app, console, err_console
from voicetrace.cli.inputs import build
from voicetrace.errors import EXIT_VIOLATION, InputError, UsageError, UserError

_MARK = {"better": "[green]▼ better[/]", "worse": "[red]▲ worse[/]", "same": "= same", "n/a": "n/a"}


def _v(value, goodput: bool = False, few: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    text = f"{100 * value:.0f}%" if goodput else f"{value:,.0f}"
    return text + ("*" if few else "")


def diff_command(a: Path, b: Path, console: Console, err_console: Console, budget_ms: float = 1000.0) -> None:
    from voicetrace.analysis.diff import diff

    ra, rb = build([a], budget_ms), build([b], budget_ms)
    rows = diff(ra.summary, rb.summary)
    table = Table(title=f"A = {a} ({ra.summary.turns} turns)   B = {b} ({rb.summary.turns} turns); ms",
                  title_justify="left", pad_edge=False)
    for header in ("metric", "stat", "A", "B", "B − A", "%", ""):
        table.add_column(header, justify="left" if header in ("metric", "stat", "") else "right", no_wrap=True)
    few = False
    for r in rows.to_dict("records"):
        goodput = r["metric"] == "goodput"
        few |= bool(r["few"])
        change = "—" if r["change"] is None or math.isnan(r["change"]) else (f"{100 * r['change']:+.0f} pts" if goodput else f"{r['change']:+,.0f}")
        pct = "" if r["change_pct"] is None or math.isnan(r["change_pct"]) else f"{r['change_pct']:+.0f}%"
        table.add_row(r["metric"], r["stat"], _v(r["a"], goodput, r["few"]), _v(r["b"], goodput, r["few"]),
                      change, pct, _MARK[r["verdict"]])
    console.print(table)
    if few:
        from voicetrace.analysis.summary import too_few_note

        console.print(f"* from fewer turns than the percentile needs ({too_few_note()}): close to the maximum", style="dim")


def check_command(paths: list[Path], budget: Path, console: Console, err_console: Console,
                  budget_ms: float | None = None) -> None:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: tomllib is the tomli package, renamed in 3.11
        import tomli as tomllib

    from voicetrace.analysis.budgets import BudgetError, check, parse

    try:
        doc = tomllib.loads(budget.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{budget}: no such file") from None
    except OSError as exc:
        raise InputError(f"{budget}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{budget}: not valid TOML ({exc})") from None
    try:
        budgets, v2v_budget = parse(doc)
    except BudgetError as exc:
        raise UsageError(f"{budget}: {exc}") from None
    report = build(paths, budget_ms or v2v_budget or 1000.0)
    results = check(report.summary, budgets)
    failed = [r for r in results if not r.ok]
    for r in results:
        actual = "—" if r.actual is None else (f"{r.actual:.1%}" if r.budget.metric == "goodput" else f"{r.actual:,.1f} ms")
        mark = "[green]ok  [/]" if r.ok else "[red]FAIL[/]"
        console.print(f"{mark} {r.budget}  (actual {actual}; {r.note})", highlight=False)
    if failed:
        raise UserError(f"{len(failed)} of {len(results)} budget(s) violated: "
                        + ", ".join(str(r.budget) for r in failed), EXIT_VIOLATION)
    console.print(f"all {len(results)} budget(s) met over {report.summary.turns} turn(s)", highlight=False)


def whatif_command(paths: list[Path], stage: str, faster_ms: float, console: Console, err_console: Console) -> None:
    from voicetrace.analysis.summary import stat
    from voicetrace.analysis.whatif import STAGES, whatif

    if stage not in STAGES:
        raise UsageError(f"--stage must be one of {', '.join(STAGES)}, not {stage!r}")
    if faster_ms <= 0:
        raise UsageError(f"--faster-ms must be positive, not {faster_ms:g}")
    report = build(paths)
    rows = whatif(report.turns, stage, faster_ms)
    table = Table(title=f"what if {stage} were {faster_ms:,.0f} ms faster (ms)", title_justify="left", pad_edge=False)
    for header in ("call", "turn", "V2V", f"{stage} on path", "gain", "new V2V", ""):
        table.add_column(header, justify="left" if header in ("call", "") else "right", no_wrap=True)
    if len(rows) <= 100:
        for r in rows.to_dict("records"):
            why = ""
            if not r["present"]:
                why = "stage missing"
            elif r["gain_ms"] < faster_ms - 0.5:
                why = "off the critical path" if r["gain_ms"] < 0.5 else "partly off the critical path"
            table.add_row(str(r["conversation"]), str(r["turn"]), _v(r["v2v_ms"]), _v(r["on_path_ms"]),
                          _v(r["gain_ms"]), _v(r["new_v2v_ms"]), why)
        console.print(table)
    before, after = stat(rows["v2v_ms"]), stat(rows["new_v2v_ms"])
    for key in ("p50", "p95"):
        if before.n == 0:
            break
        note = "" if before.enough(key) else f" (only {before.n} turns: ≈max)"
        console.print(f"V2V {key}: {before.raw[key]:,.0f} → {after.raw[key]:,.0f} ms{note}", highlight=False)
    full = int((rows["gain_ms"] >= faster_ms - 0.5).sum())
    console.print(f"{full} of {len(rows)} turn(s) gain the full {faster_ms:,.0f} ms; mean gain "
                  f"{_v(rows['gain_ms'].mean())} ms", highlight=False)


@app.command()
def diff(
    a: Path = typer.Argument(..., help="Baseline: a trace file or run folder."),
    b: Path = typer.Argument(..., help="Candidate: a trace file or run folder."),
    budget_ms: float = typer.Option(1000.0, "--budget-ms", help="V2V budget for voice goodput."),
) -> None:
    """Per metric and stage: p50/p95 of A and B, the change, better or worse."""
    diff_command(a, b, budget_ms=budget_ms, console=console, err_console=err_console)


@app.command()
def check(
    traces: List[Path] = typer.Argument(..., help="Trace files or run folders."),
    budget: Path = typer.Option(..., "--budget", help="budgets.toml: e.g. v2v.p95 = 1000, ttft.p50 = 300, goodput = 0.9."),
    budget_ms: Optional[float] = typer.Option(None, "--budget-ms", help="V2V budget for goodput (default: the file's v2v_budget_ms, else 1000)."),
) -> None:
    """Exit 1 and list each violated budget (a CI gate)."""
    check_command(list(traces), budget, budget_ms=budget_ms, console=console, err_console=err_console)


@app.command()
def whatif(
    traces: List[Path] = typer.Argument(..., help="Trace files or run folders."),
    stage: str = typer.Option(..., "--stage", help="endpointing, asr, llm, queue, prefill, tools, first_sentence, tts or transport."),
    faster_ms: float = typer.Option(..., "--faster-ms", help="How much faster the stage would be, ms."),
) -> None:
    """Recompute V2V along each turn's critical path with one stage faster."""
    whatif_command(list(traces), stage, faster_ms, console=console, err_console=err_console)
