"""Span trees of selected turns on one time axis (ms from the caller's speech end), and the spans
voicetrace does not know, grouped by name."""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.analysis.turns import KEY, NS_PER_MS
from voicetrace.traces.tables import SpanTables

KNOWN_SPANS = {sc.SPAN_CONVERSATION, sc.SPAN_TURN, *sc.STAGE_SPANS}
SERVER_PREFIX = "llm.server."
MARKER_EVENTS = {sc.EVENT_FIRST_TOKEN, sc.EVENT_TTS_FIRST_AUDIO, sc.EVENT_ASR_INTERIM}
MAX_DEPTH = 4


def span_group(names: pd.Series) -> np.ndarray:
    """'turn', 'stage', 'server', 'tool' or 'other' for each span name."""
    names = names.astype(str)
    return np.select(
        [names == sc.SPAN_TURN, names.isin(list(sc.STAGE_SPANS)), names.str.startswith(SERVER_PREFIX),
         names.str.startswith(sc.SPAN_TOOL_PREFIX)],
        ["turn", "stage", "server", "tool"], default="other")


def select_turns(turns: pd.DataFrame, limit: int = 200) -> pd.DataFrame:
    """All turns when there are few; else the slowest quarter of ``limit`` by V2V and the rest spread
    evenly over the V2V ranking (so the selector covers the distribution)."""
    if len(turns) <= limit:
        return turns
    order = turns["v2v_ms"].fillna(np.inf).to_numpy().argsort(kind="stable")[::-1]
    worst = order[: limit // 4]
    rest = order[limit // 4:]
    spread = rest[np.linspace(0, len(rest) - 1, limit - len(worst)).round().astype(int)]
    picked = np.unique(np.concatenate([worst, spread]))
    return turns.iloc[picked]


def turn_trees(tables: SpanTables, turns: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Spans under ``turns`` (turn itself included) and their events, times in ms from speech end.

    The origin is the caller's speech end; a turn without one uses its own start (``origin`` says which).
    """
    spans = tables.spans
    origin = turns[KEY].copy()
    speech_end = turns["user_end_ns"].astype("Int64")
    turn_start = spans.set_index(["trace_id", "span_id"])["start_ns"].reindex(
        pd.MultiIndex.from_frame(turns[KEY])).to_numpy()
    origin["origin_ns"] = speech_end.fillna(pd.Series(turn_start, index=speech_end.index).astype("Int64")).to_numpy()
    origin["origin"] = np.where(speech_end.isna().to_numpy(), "turn start", "speech end")

    # Walk down the tree level by level; "path" (ancestors' start times and ids) sorts it depth-first,
    # so every span is drawn right under its parent.
    level = spans.merge(turns[KEY], left_on=["trace_id", "span_id"], right_on=KEY).assign(depth=0)
    level["path"] = _path_part(level)
    found = [level]
    for depth in range(1, MAX_DEPTH + 1):
        parents = level[["trace_id", "span_id", "turn_span_id", "path"]].rename(
            columns={"span_id": "parent_span_id", "path": "parent_path"})
        level = spans.merge(parents, on=["trace_id", "parent_span_id"]).assign(depth=depth)
        if level.empty:
            break
        level["path"] = level["parent_path"] + _path_part(level)
        found.append(level.drop(columns="parent_path"))
    tree = pd.concat(found, ignore_index=True).merge(origin, on=KEY)
    base = tree["origin_ns"].astype("Int64")
    tree["start_ms"] = (tree["start_ns"].astype("Int64") - base).to_numpy(dtype="float64", na_value=np.nan) / NS_PER_MS
    tree["end_ms"] = (tree["end_ns"].astype("Int64") - base).to_numpy(dtype="float64", na_value=np.nan) / NS_PER_MS
    tree["group"] = span_group(tree["name"])
    tree = tree.sort_values(KEY + ["path"], kind="stable").reset_index(drop=True)
    cols = KEY + ["span_id", "parent_span_id", "name", "depth", "group", "start_ms", "end_ms", "attributes", "origin"]
    tree = tree[cols]

    ev = tables.events.merge(tree[KEY + ["span_id"]], on=["trace_id", "span_id"]).merge(origin, on=KEY)
    ev["at_ms"] = (ev["time_ns"].astype("Int64") - ev["origin_ns"].astype("Int64")).to_numpy(
        dtype="float64", na_value=np.nan) / NS_PER_MS
    return tree, ev[KEY + ["span_id", "name", "at_ms", "attributes"]]


def _path_part(level: pd.DataFrame) -> pd.Series:
    return level["start_ns"].astype("int64").astype(str).str.zfill(20) + level["span_id"].astype(str) + "/"


def other_spans(tables: SpanTables) -> pd.DataFrame:
    """Spans outside voicetrace's span model or outside any turn, grouped by service and name: count, p50/max (ms)."""
    spans = tables.spans
    names = spans["name"].astype(str)
    conversations = spans.loc[names == sc.SPAN_CONVERSATION, "span_id"]
    call_level = spans["parent_span_id"].isin(conversations) & (names != sc.SPAN_TURN)  # e.g. a tool at call start
    # A stage span whose turn (or an llm.server span whose llm) never arrived: listed here, not lost.
    orphan = ~spans["parent_span_id"].isin(spans["span_id"]) & ~names.isin([sc.SPAN_TURN, sc.SPAN_CONVERSATION])
    unknown = spans[(~names.isin(list(KNOWN_SPANS)) & ~names.str.startswith(SERVER_PREFIX)
                     & ~names.str.startswith(sc.SPAN_TOOL_PREFIX)) | call_level | orphan]
    if unknown.empty:
        return pd.DataFrame(columns=["service", "name", "count", "p50_ms", "max_ms"])
    dur = (unknown["end_ns"] - unknown["start_ns"]) / NS_PER_MS
    grouped = dur.groupby([unknown["service"].fillna(""), unknown["name"]])
    out = pd.DataFrame({"count": grouped.size(), "p50_ms": grouped.median(), "max_ms": grouped.max()})
    out.index.names = ["service", "name"]
    return out.reset_index().sort_values("count", ascending=False, kind="stable").reset_index(drop=True)
