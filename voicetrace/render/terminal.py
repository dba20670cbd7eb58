"""The per-turn table and percentiles in the terminal (rich)."""

from __future__ import annotations

import math

import pandas as pd
from rich.console import Console
from rich.table import Table

from voicetrace.analysis.metrics import ACOUSTIC, HEADLINE, METRICS, SEGMENTS, TURN_TABLE
from voicetrace.render import notes
from voicetrace.render.fmt import BEHIND, CONTENT_HINT, NO_RECORDING_NOTE, flagged, ms, share, stat_ms

_COLUMNS = [(METRICS[k].column, METRICS[k].header) for k in TURN_TABLE]
_ACOUSTIC_COLUMNS = [(METRICS[k].column, METRICS[k].header) for k in ACOUSTIC]
"""Beside V2V when the run's call.wav was analysed (voicetrace.acoustic): acoustic V2V, acoustic − event."""


def _new_table(title: str, acoustic: bool = False) -> Table:
    table = Table(title=title, title_justify="left", pad_edge=False, collapse_padding=True)
    table.add_column("turn", justify="right", no_wrap=True)
    table.add_column("at s", justify="right", no_wrap=True)
    table.add_column("transcript start", no_wrap=True, max_width=22, overflow="ellipsis")
    for col, header in _COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
        if acoustic and col == "v2v_ms":
            for _, ac_header in _ACOUSTIC_COLUMNS:
                table.add_column(ac_header, justify="right", no_wrap=True)
    return table


def _delta(value, tolerance_ms: float = 10.0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    text = f"{value:+,.0f}"
    return f"[yellow]{text}[/]" if abs(value) > tolerance_ms else text


def print_acoustic(console: Console, acoustic) -> None:
    """Barge-ins found in the recordings and every acoustic/event V2V disagreement (voicetrace.acoustic)."""
    if acoustic is None:
        return
    for row in acoustic.barge_ins.itertuples():
        console.print(f"barge-in (audio) {row.conversation} turn {row.turn} at {row.start_ms / 1000:.2f} s: "
                      f"{row.interrupter} cut in on {row.interrupted_speaker}, {row.overlap_ms:,.0f} ms overlap, "
                      f"{row.stopped} stopped", highlight=False)
    for line in acoustic.warnings:
        console.print(f"[yellow]warning:[/] {line}", highlight=False, soft_wrap=True)


def print_turn_table(console: Console, turns: pd.DataFrame, skipped: int = 0) -> None:
    """One table per call; '—' marks a missing stage (the percentiles are the headline's)."""
    if skipped:
        console.print(f"[yellow]skipped {skipped} unreadable line(s) in the trace input[/]")
    if turns.empty:
        console.print("no turns in the trace")
        return
    acoustic = "acoustic_v2v_ms" in turns  # the run's call.wav was analysed: shown even where no turn matched
    for call, rows in turns.groupby("conversation", sort=False):
        title = f"{call}: per turn, ms (⚡ = caller barged in)"
        if acoustic:
            title += "; ac V2V from call.wav, Δ ac = acoustic − event"
        table = _new_table(title, acoustic)
        for row in rows.itertuples(index=False):
            cells = []
            for col, _ in _COLUMNS:
                cells.append(flagged(row, col, ms(getattr(row, col))))
                if acoustic and col == "v2v_ms":
                    cells += [flagged(row, "acoustic_v2v_ms", ms(row.acoustic_v2v_ms)), _delta(row.v2v_delta_ms)]
            behind = BEHIND if isinstance(getattr(row, "behind_real_time", None), list) else ""
            table.add_row(
                f"{row.turn}{'⚡' if row.interrupted else ''}{behind}",
                "—" if pd.isna(row.at_s) else f"{row.at_s:.1f}",
                row.transcript if isinstance(row.transcript, str) and row.transcript else "·",
                *cells,
            )
        console.print(table)


MAX_TURN_ROWS = 100
"""Above this many turns the per-turn tables are left to --json and the HTML report."""


def print_headline(console: Console, report) -> None:
    """The headline numbers and the mean additive breakdown (same numbers as --json and the HTML)."""
    s = report.summary
    table = Table(title=f"{s.calls} call(s), {s.turns} turn(s), ms", title_justify="left", pad_edge=False)
    for header in ("metric", "n", "p50", "p90", "p95", "p99", "max"):
        table.add_column(header, justify="left" if header == "metric" else "right", no_wrap=True)
    for name in HEADLINE:
        st = s.get(name)
        table.add_row(METRICS[name].header, str(st.n), *[stat_ms(st, f"p{p}") for p in (50, 90, 95, 99)],
                      ms(st.value("max")))
    console.print(table)
    goodput = f"voice goodput: {share(s.goodput)} of {s.goodput_n} turn(s) with V2V ≤ {s.budget_ms:,.0f} ms"
    console.print(goodput, highlight=False)
    means = {seg: report.turns[METRICS[seg].segment_column].mean() for seg in SEGMENTS} if s.turns else {}
    parts = [f"{METRICS[seg].label} {ms(v)}" for seg, v in means.items() if v == v and v is not None]
    if parts:
        console.print("mean V2V breakdown (critical path): " + " + ".join(parts)
                      + f" = {ms(report.turns['v2v_ms'].mean())}", highlight=False)
    if len(report.other):
        console.print(f"{int(report.other['count'].sum())} span(s) outside the span model, "
                      f"{len(report.other)} name(s): {', '.join(report.other['name'].astype(str)[:5])}", style="dim")


def print_notes(console: Console, turns: pd.DataFrame) -> None:
    """Loop blocks, turns behind real time, TTFT on the wire (render.notes: the HTML shows the same)."""
    for line in notes.integration_notes(turns):
        console.print(line, highlight=False)
    for line in notes.behind_notes(turns):
        console.print(f"[yellow]{line}[/]", highlight=False, soft_wrap=True)
    if notes.has_impossible(turns):
        console.print(notes.IMPOSSIBLE_NOTE, style="dim")
    wire = notes.wire_note(turns)
    if wire:
        console.print(wire, highlight=False)


def render(report, out) -> None:
    """Renderer interface: the per-turn tables (when not too many) and the headline to ``out``."""
    console = Console(file=out, width=None if out.isatty() else 140)
    turns = report.turns
    if len(turns) > MAX_TURN_ROWS:
        console.print(f"{len(turns)} turns: per-turn rows are in --json and the HTML report (-o)")
    else:
        print_turn_table(console, turns, skipped=report.tables.skipped)
        if turns["transcript"].isna().all() and len(turns):
            console.print(CONTENT_HINT, style="dim")
    print_notes(console, turns)
    if len(turns):
        print_headline(console, report)
    if report.acoustic is None and len(turns):
        console.print(NO_RECORDING_NOTE, style="dim")
    print_acoustic(console, report.acoustic)
    for row in report.server_skew.itertuples():
        console.print(f"[yellow]LLM server clock off by {row.skew_ms:,.1f} ms[/] (server span {row.server_span_id} "
                      f"outside client llm span {row.llm_span_id}): its queue/prefill/decode are not drawn")
