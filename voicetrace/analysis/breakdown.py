"""The additive voice-to-voice breakdown: where each millisecond between the caller's speech end
and the bot's first audio went, along the turn's critical path.

The reply is a chain of milestones after the caller's speech end S::

    turn decided → final transcript → LLM request → first token → TTS start → first audio → bot audio
    played → bot audible

Walking the chain with a running maximum c (c starts at S), each stage owns ``max(c, milestone) − c``
(so a stage that finished while an earlier one was still running owns 0: it was off the critical
path), clipped to the bot's first audio. The gap between "ready" (turn decided and transcript in) and
the LLM request, time after a missing milestone, and anything else not explained by a stage go to
``unattributed``. Everything is computed in integer nanoseconds relative to S, so the segments sum
*exactly* to V2V. Inside the TTFT window the server's queue/prefill spans and tool spans are carved
out when present (``llm_ttft`` keeps the rest).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.analysis import integration
from voicetrace.analysis.metrics import CHAIN, METRICS, SEGMENTS
from voicetrace.analysis.turns import KEY, NS_PER_MS
from voicetrace.traces.tables import SpanTables

SPAN_SERVER_QUEUE = sc.SPAN_LLM_QUEUE
SPAN_SERVER_PREFILL = sc.SPAN_LLM_PREFILL
SPAN_SERVER_DECODE = sc.SPAN_LLM_DECODE

# SEGMENTS (order) and CHAIN ((segment owning the step, milestone column); None = always
# unattributed) come from the registry: each segment's ``between`` milestones place it in the chain.


def _rel(turns: pd.DataFrame, col: str) -> np.ndarray:
    """Milestone relative to the caller's speech end, exact float nanoseconds (NaN = missing)."""
    return (turns[col] - turns["user_end_ns"]).to_numpy(dtype="float64", na_value=np.nan)


def breakdown(turns: pd.DataFrame, tables: SpanTables) -> pd.DataFrame:
    """One row per turn (same order as ``turns``): KEY, ``<segment>_ns``/``_ms``, ``v2v_ms``.

    A stage that is missing in a turn is NaN (its time is in ``unattributed``); the whole row is NaN
    when V2V itself is unknown or negative.
    """
    n = len(turns)
    out = pd.DataFrame({k: turns[k].to_numpy() for k in KEY}) if n else pd.DataFrame(columns=KEY)
    if n == 0:
        for seg in SEGMENTS:
            out[f"{seg}_ns"] = pd.Series(dtype="float64")
            out[f"{seg}_ms"] = pd.Series(dtype="float64")
        out["v2v_ms"] = pd.Series(dtype="float64")
        return out

    v2v = _rel(turns, METRICS["v2v"].between[1])
    valid = np.isfinite(v2v) & (v2v >= 0)
    seg = {s: np.full(n, np.nan) for s in SEGMENTS}
    unattributed = np.zeros(n)
    c = np.zeros(n)
    prev_present = np.ones(n, dtype=bool)
    window = {}
    unowned = []  # windows whose time went to unattributed (relative to S), for the integration carve
    for name, col in CHAIN:
        m = _rel(turns, col)
        present = np.isfinite(m)
        new_c = np.where(present, np.minimum(np.maximum(c, m), np.where(valid, v2v, np.inf)), c)
        step = new_c - c
        owned = present & prev_present & (name is not None)
        if name is not None:
            seg[name] = np.where(owned, step, np.nan)
            if name == "llm_ttft":
                window = {"start": c.copy(), "end": new_c.copy(), "owned": owned}
        else:
            gap = {"start": c.copy(), "end": new_c.copy()}  # ready → LLM request
        unattributed += np.where(owned, 0.0, step)
        unowned.append((c, np.where(owned, c, new_c)))
        c = new_c
        prev_present = present
    unattributed += np.where(valid, v2v - c, 0.0)
    unowned.append((c, np.where(valid, v2v, c)))
    seg["unattributed"] = unattributed

    _carve_ttft(turns, tables, seg, window)
    # Tools that ran between "ready" and the LLM request (e.g. on the transcript) leave unattributed.
    in_gap = _overlap(turns, tables, gap, tools=True)
    if in_gap is not None:
        found = np.isfinite(in_gap)
        take = np.minimum(np.nan_to_num(in_gap), seg["unattributed"])
        seg["tools"] = np.where(found, np.nan_to_num(seg["tools"]) + take, seg["tools"])
        seg["unattributed"] = seg["unattributed"] - np.where(found, take, 0.0)
    # Loop blocks and queue waits inside the unattributed windows (traces that measured them).
    out.attrs["queue_waits"] = integration.carve(turns, tables, seg, unowned)

    for s in SEGMENTS:
        values = np.where(valid, seg[s], np.nan)
        out[f"{s}_ns"] = values
        out[f"{s}_ms"] = values / NS_PER_MS
    out["v2v_ms"] = np.where(valid, v2v, np.nan) / NS_PER_MS
    return out


def _carve_ttft(turns: pd.DataFrame, tables: SpanTables, seg: dict, window: dict) -> None:
    """Split the critical-path TTFT window into tools, server queue and prefill, and the rest."""
    n = len(turns)
    total = np.where(window["owned"], seg["llm_ttft"], 0.0)
    left = total.copy()
    for name, overlap in (
        ("tools", _overlap(turns, tables, window, tools=True)),
        ("llm_queue", _overlap(turns, tables, window, names=(SPAN_SERVER_QUEUE,))),
        ("llm_prefill", _overlap(turns, tables, window, names=(SPAN_SERVER_PREFILL,))),
    ):
        if overlap is None:
            continue
        known = np.isfinite(overlap) & window["owned"]
        take = np.where(known, np.minimum(np.nan_to_num(overlap), left), np.nan)
        seg[name] = take
        left = left - np.nan_to_num(take)
    seg["llm_ttft"] = np.where(window["owned"], left, np.nan) if n else seg["llm_ttft"]


def _overlap(turns, tables, window, names=(), tools=False) -> np.ndarray | None:
    """Per turn: nanoseconds of the named spans (under the turn or its llm) inside ``window``.

    NaN for turns without such spans; None when no turn has any.
    """
    spans = tables.spans
    if tools:
        hits = spans[spans["name"].str.startswith(sc.SPAN_TOOL_PREFIX)]
    else:
        hits = spans[spans["name"].isin(names)]
    if hits.empty:
        return None
    keyed = _with_turn(hits, spans, turns)
    if keyed.empty:
        return None
    frame = pd.DataFrame({k: turns[k].to_numpy() for k in KEY})
    frame["speech_end_ns"] = turns["user_end_ns"].to_numpy()
    frame["w0"] = window["start"]
    frame["w1"] = window["end"]
    frame["row"] = np.arange(len(frame))
    m = keyed.merge(frame, on=KEY)
    start = (m["start_ns"].astype("Int64") - m["speech_end_ns"]).to_numpy(dtype="float64", na_value=np.nan)
    end = (m["end_ns"].astype("Int64") - m["speech_end_ns"]).to_numpy(dtype="float64", na_value=np.nan)
    inside = np.clip(np.minimum(end, m["w1"].to_numpy()) - np.maximum(start, m["w0"].to_numpy()), 0, None)
    sums = pd.Series(np.nan_to_num(inside)).groupby(m["row"].to_numpy()).sum()
    result = np.full(len(frame), np.nan)
    result[sums.index.to_numpy()] = sums.to_numpy()
    return result


def _with_turn(hits: pd.DataFrame, spans: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """Attach the turn key to spans that sit directly under a turn or one level deeper (under llm)."""
    turn_ids = turns[KEY].rename(columns={"turn_span_id": "parent_span_id"})
    direct = hits.merge(turn_ids, on=["trace_id", "parent_span_id"])
    direct = direct.assign(turn_span_id=direct["parent_span_id"])
    parents = spans[["trace_id", "span_id", "parent_span_id"]].rename(
        columns={"span_id": "mid_id", "parent_span_id": "turn_span_id"})
    deeper = hits.merge(parents, left_on=["trace_id", "parent_span_id"], right_on=["trace_id", "mid_id"])
    deeper = deeper.merge(turns[KEY], on=KEY)
    cols = KEY + ["span_id", "name", "start_ns", "end_ns"]
    return pd.concat([direct[cols], deeper[cols]], ignore_index=True).drop_duplicates(["trace_id", "span_id"])
