"""Integration time per turn: how much of the breakdown's unattributed time was a blocked event loop
(``loop.blocked`` spans) or frames waiting in a processor's queue (``queue.wait`` spans), and which
processor blocked the loop in the turn's V2V window.

``carve`` takes the unattributed windows the breakdown walked (relative to the caller's speech end)
and moves time out of ``unattributed``: first the union of loop blocks inside them (``loop_lag``),
then, in what is left, queue waits (``queue_wait``; processors with the most wait first, each
instant counted once), so the segments still sum exactly to V2V. Traces whose conversation was not
monitored (no ``voice.loop.interval_ms``) keep NaN: not measured, not zero.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.traces.tables import SpanTables

Intervals = list[tuple[float, float]]
INTEGRATION_COLUMNS = ("loop_blocked_ms", "loop_blocker", "queue_waits_ms")
"""Per-turn columns ``per_turn`` adds: the longest block in the V2V window, its processor, and the
queue waits carved out of unattributed time by processor (dict, ms)."""


def _attr(attrs, key):
    return attrs.get(key) if isinstance(attrs, dict) else None


def _spans(tables: SpanTables, name: str, key: str) -> pd.DataFrame:
    spans = tables.spans
    hits = spans[spans["name"] == name]
    return pd.DataFrame({"trace_id": hits["trace_id"].to_numpy(), "start_ns": hits["start_ns"].to_numpy(),
                         "end_ns": hits["end_ns"].to_numpy(),
                         "processor": [_attr(a, key) for a in hits["attributes"]]})


def monitored_traces(tables: SpanTables) -> set:
    spans = tables.spans
    conv = spans[spans["name"] == sc.SPAN_CONVERSATION]
    return {t for t, a in zip(conv["trace_id"], conv["attributes"]) if _attr(a, sc.ATTR_LOOP_INTERVAL_MS) is not None}


def _union(intervals: Intervals) -> Intervals:
    out: Intervals = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _intersect(xs: Intervals, ys: Intervals) -> Intervals:
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if b > a:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def _minus(xs: Intervals, ys: Intervals) -> Intervals:
    out = []
    for a, b in xs:
        for c, d in ys:
            if d <= a or c >= b:
                continue
            if c > a:
                out.append((a, c))
            a = max(a, d)
            if a >= b:
                break
        if a < b:
            out.append((a, b))
    return out


def _length(xs: Intervals) -> float:
    return float(sum(b - a for a, b in xs))


def _relative(rows: pd.DataFrame | None, origin_ns: int) -> Intervals:
    """Span intervals relative to ``origin_ns``, exact (integer ns before the float conversion)."""
    if rows is None:
        return []
    start = rows["start_ns"].to_numpy(dtype="int64") - origin_ns
    end = rows["end_ns"].to_numpy(dtype="int64") - origin_ns
    return _union(list(zip(start.astype("float64"), end.astype("float64"))))


def _by_trace(frame: pd.DataFrame) -> dict:
    return {t: g for t, g in frame.groupby("trace_id", sort=False)} if len(frame) else {}


def carve(turns: pd.DataFrame, tables: SpanTables, seg: dict, windows: list[tuple[np.ndarray, np.ndarray]]) -> dict:
    """Move loop blocks and queue waits out of ``seg["unattributed"]`` (in place) into ``seg["loop_lag"]`` and
    ``seg["queue_wait"]``; returns ``{row: {processor: ns}}`` of the queue waits taken."""
    n = len(turns)
    monitored = monitored_traces(tables)
    taken: dict[int, dict] = {}
    if not n or not monitored:
        return taken
    blocks = _by_trace(_spans(tables, sc.SPAN_LOOP_BLOCKED, sc.ATTR_LOOP_PROCESSOR))
    waits = _by_trace(_spans(tables, sc.SPAN_QUEUE_WAIT, sc.ATTR_QUEUE_PROCESSOR))
    trace_ids = turns["trace_id"].to_numpy()
    user_end = turns["user_end_ns"].to_numpy()
    loop_lag, queue_wait = np.full(n, np.nan), np.full(n, np.nan)
    for row in range(n):
        s = user_end[row]
        if trace_ids[row] not in monitored or pd.isna(s) or not np.isfinite(seg["unattributed"][row]):
            continue
        loop_lag[row] = queue_wait[row] = 0.0
        left = seg["unattributed"][row]
        window = _union([(a[row], b[row]) for a, b in windows if np.isfinite(a[row]) and np.isfinite(b[row])])
        if left <= 0 or not window:
            continue
        b_rows = blocks.get(trace_ids[row])
        blocked = _relative(b_rows, int(s))
        in_block = _intersect(window, blocked)
        loop_lag[row] = min(_length(in_block), left)
        left -= loop_lag[row]
        free = _minus(window, blocked)
        w_rows = waits.get(trace_ids[row])
        if w_rows is None or left <= 0:
            continue
        per = {}
        for name, g in w_rows.groupby("processor", sort=False, dropna=False):
            per[name] = _intersect(free, _relative(g, int(s)))
        got = {}
        for name in sorted(per, key=lambda k: -_length(per[k])):
            share = _intersect(free, per[name])
            amount = min(_length(share), left)
            if amount > 0:
                got[str(name)] = amount
                left -= amount
                free = _minus(free, share)
        queue_wait[row] = float(sum(got.values()))
        if got:
            taken[row] = got
    seg["loop_lag"] = loop_lag
    seg["queue_wait"] = queue_wait
    seg["unattributed"] = seg["unattributed"] - np.nan_to_num(loop_lag) - np.nan_to_num(queue_wait)
    return taken


def per_turn(turns: pd.DataFrame, tables: SpanTables, queue_taken: dict) -> pd.DataFrame:
    """``INTEGRATION_COLUMNS`` per turn: the longest ``loop.blocked`` overlapping [speech end, first bot
    audio] (whole length, ms) and its processor; the queue waits ``carve`` took, in ms by processor."""
    n = len(turns)
    out = pd.DataFrame({"loop_blocked_ms": np.full(n, np.nan), "loop_blocker": [None] * n,
                        "queue_waits_ms": [None] * n})
    monitored = monitored_traces(tables) if n else set()
    if not monitored:
        return out
    blocks = _by_trace(_spans(tables, sc.SPAN_LOOP_BLOCKED, sc.ATTR_LOOP_PROCESSOR))
    lo = turns["user_end_ns"].to_numpy(dtype="float64", na_value=np.nan)
    hi = turns["bot_start_ns"].to_numpy(dtype="float64", na_value=np.nan)
    for row, trace_id in enumerate(turns["trace_id"].to_numpy()):
        if trace_id not in monitored:
            continue
        out.at[row, "loop_blocked_ms"] = 0.0
        g = blocks.get(trace_id)
        if g is not None and np.isfinite(lo[row]):
            end = hi[row] if np.isfinite(hi[row]) else np.inf
            hit = g[(g["end_ns"] > lo[row]) & (g["start_ns"] < end)]
            if len(hit):
                longest = hit.loc[(hit["end_ns"] - hit["start_ns"]).idxmax()]
                out.at[row, "loop_blocked_ms"] = (longest["end_ns"] - longest["start_ns"]) / 1e6
                out.at[row, "loop_blocker"] = longest["processor"]
        if row in queue_taken:
            out.at[row, "queue_waits_ms"] = {k: round(v / 1e6, 3) for k, v in queue_taken[row].items()}
    return out
