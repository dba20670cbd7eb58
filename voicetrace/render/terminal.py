"""The per-turn table and percentiles in the terminal (rich)."""

from __future__ import annotations

import math

import pandas as pd
from rich.console import Console
from rich.table import Table

from voicetrace.analysis.turns import MIN_TURNS_FOR, percentiles

_COLUMNS = [
    ("endpointing_ms", "endpoint"),
    ("asr_final_ms", "ASR fin"),
    ("ttft_ms", "TTFT"),
    ("first_sentence_ms", "1st sent"),
    ("tts_ttfb_ms", "TTS TTFB"),
    ("v2v_ms", "V2V"),
    ("turn_e2e_ms", "turn E2E"),
]


def _ms(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.0f}"


def _new_table(title: str) -> Table:
    table = Table(title=title, title_justify="left", pad_edge=False, collapse_padding=True)
    table.add_column("turn", justify="right", no_wrap=True)
    table.add_column("at s", justify="right", no_wrap=True)
    table.add_column("transcript start", no_wrap=True, max_width=22, overflow="ellipsis")
    for _, header in _COLUMNS:
        table.add_column(header, justify="right", no_wrap=True)
    return table


def print_turn_table(console: Console, turns: pd.DataFrame, skipped: int = 0) -> None:
    """One table per call, then p50/p95 over every turn; '—' marks a missing stage."""
    if skipped:
        console.print(f"[yellow]skipped {skipped} unreadable line(s) in the trace input[/]")
    if turns.empty:
        console.print("no turns in the trace")
        return
    for call, rows in turns.groupby("conversation", sort=False):
        table = _new_table(f"{call}: per turn, ms (⚡ = caller barged in)")
        for row in rows.itertuples(index=False):
            table.add_row(
                f"{row.turn}{'⚡' if row.interrupted else ''}",
                "—" if pd.isna(row.at_s) else f"{row.at_s:.1f}",
                row.transcript if isinstance(row.transcript, str) and row.transcript else "·",
                *[_ms(getattr(row, col)) for col, _ in _COLUMNS],
            )
        console.print(table)
    stats = percentiles(turns, [c for c, _ in _COLUMNS])
    summary = _new_table(f"across {len(turns)} turn(s)")
    for p in (50, 95):
        few = int(stats["n"].max()) < MIN_TURNS_FOR[p]
        note = f"n={int(stats['n'].max())}" + (f" <{MIN_TURNS_FOR[p]}: ≈max" if few else "")
        summary.add_row(f"p{p}", "", note, *[_ms(stats.loc[c, f"p{p}"]) for c, _ in _COLUMNS])
    console.print(summary)
    if turns["transcript"].isna().all():
        console.print("transcripts not captured (run with --capture-content to record them)", style="dim")
