"""Token timing on ``llm`` spans: inter-token gaps (ITL), split across multi-token chunks.

Each ``gen_ai.token`` event is one content chunk; ``voice.llm.chunk_tokens`` says how many tokens
it carried (default 1). The gap before a chunk of k tokens is split into k equal gaps, marked
``split``. Tokens that arrived in the same chunk as the first token have no measurable gap and
are not counted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.analysis.turns import KEY, NS_PER_MS
from voicetrace.traces.tables import SpanTables

GAP_COLUMNS = KEY + ["llm_span_id", "gap_ms", "split"]


def token_events(tables: SpanTables, turns: pd.DataFrame) -> pd.DataFrame:
    """Token events of each turn's llm spans: KEY, llm_span_id, time_ns, tokens."""
    ev = tables.events
    ev = ev[ev["name"] == sc.EVENT_TOKEN]
    spans = tables.spans
    llm = spans[spans["name"] == sc.SPAN_LLM][["trace_id", "span_id", "parent_span_id"]]
    llm = llm.merge(turns[KEY], left_on=["trace_id", "parent_span_id"], right_on=KEY)
    ev = ev.merge(llm[["trace_id", "span_id", "turn_span_id"]], on=["trace_id", "span_id"])
    tokens = np.fromiter(
        (a.get(sc.ATTR_TOKEN_COUNT, 1) if isinstance(a, dict) else 1 for a in ev["attributes"]),
        dtype="int64", count=len(ev),
    )
    return pd.DataFrame({
        "trace_id": ev["trace_id"].to_numpy(), "turn_span_id": ev["turn_span_id"].to_numpy(),
        "llm_span_id": ev["span_id"].to_numpy(), "time_ns": ev["time_ns"].to_numpy(dtype="int64"),
        "tokens": np.maximum(tokens, 1),
    })


def token_gaps(tokens: pd.DataFrame) -> pd.DataFrame:
    """One row per measurable inter-token gap (ms), vectorised."""
    if tokens.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "gap_ms" else object) for c in GAP_COLUMNS})
    t = tokens.sort_values(["trace_id", "llm_span_id", "time_ns"], kind="stable")
    same = (t["llm_span_id"].to_numpy()[1:] == t["llm_span_id"].to_numpy()[:-1]) & (
        t["trace_id"].to_numpy()[1:] == t["trace_id"].to_numpy()[:-1])
    dt = np.diff(t["time_ns"].to_numpy())[same]
    k = t["tokens"].to_numpy()[1:][same]
    rows = np.flatnonzero(same) + 1
    repeat = np.repeat(rows, k)
    return pd.DataFrame({
        "trace_id": t["trace_id"].to_numpy()[repeat],
        "turn_span_id": t["turn_span_id"].to_numpy()[repeat],
        "llm_span_id": t["llm_span_id"].to_numpy()[repeat],
        "gap_ms": np.repeat(dt / k, k) / NS_PER_MS,
        "split": np.repeat(k > 1, k),
    })


def per_turn_itl(tokens: pd.DataFrame, gaps: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Per turn (same order as ``turns``): itl_p50/p90/p99_ms, tpot_ms, tokens_timed.

    TPOT = (last token − first token) / (tokens − 1) per llm request with more than one token,
    averaged over the turn's requests; NaN without token events.
    """
    index = pd.MultiIndex.from_frame(turns[KEY])
    out = pd.DataFrame(index=index)
    if gaps.empty:
        for p in (50, 90, 99):
            out[f"itl_p{p}_ms"] = np.nan
        out["tokens_timed"] = 0
    else:
        grouped = gaps.groupby(KEY)["gap_ms"]
        for p in (50, 90, 99):
            out[f"itl_p{p}_ms"] = grouped.quantile(p / 100).reindex(index)
        out["tokens_timed"] = tokens.groupby(KEY)["tokens"].sum().reindex(index).fillna(0).astype(int)
    out["tpot_ms"] = np.nan
    if not tokens.empty:
        per_span = tokens.groupby(KEY + ["llm_span_id"]).agg(
            first=("time_ns", "min"), last=("time_ns", "max"), n=("tokens", "sum"))
        per_span = per_span[per_span["n"] > 1]
        tpot = ((per_span["last"] - per_span["first"]) / (per_span["n"] - 1) / NS_PER_MS).groupby(KEY).mean()
        out["tpot_ms"] = tpot.reindex(index).to_numpy(dtype="float64")
    return out.reset_index(drop=True)
