"""Everything a report shows, computed once: the spans → turns table (metrics, breakdown, ITL,
prompt tokens, KV bytes), token gaps, the summary, unknown spans. Renderers only format this.

Build a Report with ``voicetrace.report.build_report`` (it normalises the spans first); this module is
the analysis step of that pipeline, on tables already normalised."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from voicetrace.analysis.breakdown import SEGMENTS, breakdown
from voicetrace.analysis.integration import per_turn as integration_per_turn
from voicetrace.analysis.realtime import behind_real_time, drop_impossible
from voicetrace.analysis.wire import per_turn as wire_per_turn
from voicetrace.analysis.kvcache import ModelShape, kv_bytes, prompt_tokens
from voicetrace.analysis.summary import Summary, summarize
from voicetrace.analysis.tokens import per_turn_itl, token_events, token_gaps
from voicetrace.analysis.turns import turn_metrics
from voicetrace.analysis.waterfall import other_spans
from voicetrace.traces.server_spans import SKEW_COLUMNS, SKEW_NOTE
from voicetrace.traces.tables import SpanTables


@dataclass
class Report:
    tables: SpanTables
    turns: pd.DataFrame  # one row per turn: turn_metrics columns + bd_<segment>_ms breakdown + ITL + tokens/KV
    gaps: pd.DataFrame  # one row per inter-token gap
    summary: Summary
    other: pd.DataFrame  # spans outside the span model, grouped
    model_shape: ModelShape | None = None
    sources: list[str] = field(default_factory=list)
    server_skew: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Server request spans (vLLM/SGLang) that did not fit inside the client's llm span."""
    acoustic: object | None = None
    """voicetrace.acoustic.check.AcousticCheck when the traces come with their recording (run folders)."""

    @property
    def content_captured(self) -> bool:
        return bool(self.turns["transcript"].notna().any() or self.turns["llm_output"].notna().any()) if len(self.turns) else False


def analyse(turns: pd.DataFrame, tables: SpanTables, model_shape: ModelShape | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """turn_metrics rows → the full turns table and the token gaps."""
    parts = breakdown(turns, tables)
    tokens = token_events(tables, turns)
    gaps = token_gaps(tokens)
    itl = per_turn_itl(tokens, gaps, turns)
    full = turns.copy()
    for seg in SEGMENTS:  # critical-path segments, prefixed: they may differ from the stage metrics
        full[f"bd_{seg}_ms"] = parts[f"{seg}_ms"].to_numpy()
    for col in itl.columns:
        full[col] = itl[col].to_numpy()
    for col, values in integration_per_turn(turns, tables, parts.attrs.get("queue_waits", {})).items():
        full[col] = values.to_numpy()
    full["prompt_tokens"] = prompt_tokens(turns, tables)
    full["kv_cache_bytes"] = kv_bytes(full["prompt_tokens"].to_numpy(), turns["output_tokens"], model_shape)
    full["behind_real_time"] = behind_real_time(turns, tables)
    for col, values in wire_per_turn(turns, tables).items():
        full[col] = values.to_numpy()
    return drop_impossible(full), gaps


def analyse_normalised(tables: SpanTables, budget_ms: float = 1000.0, model_shape: ModelShape | None = None,
                       sources: list[str] | None = None) -> Report:
    """The Report of normalised tables (voicetrace.report.build_report normalises, then calls this)."""
    turns, gaps = analyse(turn_metrics(tables), tables, model_shape)
    skew = tables.notes.get(SKEW_NOTE, pd.DataFrame(columns=SKEW_COLUMNS))
    return Report(tables, turns, gaps, summarize(turns, gaps, budget_ms), other_spans(tables), model_shape,
                  list(sources or []), skew)
