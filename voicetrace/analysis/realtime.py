"""Turns that ran behind real time, and values no real call can have.

A turn span with ``voice.behind_real_time`` (``capture.realtime``) gets its reasons in the
``behind_real_time`` column, so every output marks it. A negative voice-to-voice (the bot audible
before the caller stopped) or turn E2E is not a latency but a sign the run fell behind (or the
clocks disagree): it becomes NaN, so no table, percentile or budget uses it, and the metric's name
goes into the turn's ``impossible`` list, so renderers say so instead of printing a number.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.traces.tables import SpanTables

IMPOSSIBLE_BELOW_ZERO = ("v2v_ms", "turn_e2e_ms", "acoustic_v2v_ms")
"""Per-turn columns that cannot be negative in a call that kept up with real time."""


def behind_real_time(turns: pd.DataFrame, tables: SpanTables) -> list:
    """Per turn: the reasons its turn span gives for having run behind real time, else None."""
    spans = tables.spans
    if not len(turns):
        return []
    marked = spans[[isinstance(a, dict) and bool(a.get(sc.ATTR_BEHIND_REAL_TIME)) for a in spans["attributes"]]]
    reasons = {(t, s): list(a.get(sc.ATTR_BEHIND_REASONS) or ["unknown"])
               for t, s, a in zip(marked["trace_id"], marked["span_id"], marked["attributes"])}
    return [reasons.get(key) for key in zip(turns["trace_id"], turns["turn_span_id"])]


def drop_impossible(turns: pd.DataFrame) -> pd.DataFrame:
    """NaN for negative ``IMPOSSIBLE_BELOW_ZERO`` values; their names in ``impossible`` (None: none)."""
    flags = {c: (turns[c].to_numpy(dtype="float64", na_value=np.nan) < 0) for c in IMPOSSIBLE_BELOW_ZERO if c in turns}
    if not any(f.any() for f in flags.values()):
        if "impossible" not in turns:
            turns["impossible"] = [None] * len(turns)
        return turns
    previous = turns["impossible"].tolist() if "impossible" in turns else [None] * len(turns)
    out = []
    for row, before in enumerate(previous):
        names = list(before or []) + [c for c, f in flags.items() if f[row] and c not in (before or [])]
        out.append(names or None)
    for c, f in flags.items():
        turns[c] = turns[c].mask(f)
    turns["impossible"] = out
    return turns
