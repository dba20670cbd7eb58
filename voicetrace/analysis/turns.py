"""Spans → one row per turn with DESIGN.md's metrics (milliseconds).

Pure and vectorised: DataFrames in, DataFrame out; a stage that is missing gives NaN
(shown as missing), never zero.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.traces.otlp_json import SpanTables

NS_PER_MS = 1_000_000

STAGE_METRICS = [
    "endpointing_ms",
    "asr_final_ms",
    "ttft_ms",
    "first_sentence_ms",
    "tts_ttfb_ms",
    "v2v_ms",
    "turn_e2e_ms",
]
"""The per-turn latency metrics, in the order a turn's reply builds up."""

_SHORT = {
    sc.SPAN_USER_SPEECH: "user",
    sc.SPAN_ENDPOINTING: "endpoint",
    sc.SPAN_ASR: "asr",
    sc.SPAN_LLM: "llm",
    sc.SPAN_TTS: "tts",
    sc.SPAN_BOT_SPEECH: "bot",
}


def _first_event_times(events: pd.DataFrame, name: str) -> pd.Series:
    hits = events[events["name"] == name]
    return hits.groupby(["trace_id", "span_id"])["time_ns"].min()


def turn_metrics(tables: SpanTables) -> pd.DataFrame:
    spans = tables.spans
    turns = spans[spans["name"] == sc.SPAN_TURN]
    if turns.empty:
        return pd.DataFrame(columns=["trace_id", "turn_span_id", "conversation", "turn", "at_s", "transcript"] + STAGE_METRICS)

    out = pd.DataFrame(
        {
            "trace_id": turns["trace_id"].to_numpy(),
            "turn_span_id": turns["span_id"].to_numpy(),
            "conversation_span_id": turns["parent_span_id"].to_numpy(),
            "turn": [a.get(sc.ATTR_TURN_NUMBER) for a in turns["attributes"]],
            "interrupted": [bool(a.get(sc.ATTR_TURN_INTERRUPTED, False)) for a in turns["attributes"]],
            "language": [a.get(sc.ATTR_LANGUAGE) for a in turns["attributes"]],
        }
    )

    # Stage spans of each turn: the first of each name under the turn, start and end side by side.
    stages = spans[spans["name"].isin(list(_SHORT))].sort_values("start_ns")
    stages = stages.drop_duplicates(["trace_id", "parent_span_id", "name"])
    wide = stages.pivot_table(
        index=["trace_id", "parent_span_id"], columns="name", values=["start_ns", "end_ns"], aggfunc="first"
    )
    wide.columns = [f"{_SHORT[name]}_{edge.replace('_ns', '')}_ns" for edge, name in wide.columns]
    out = out.merge(wide, how="left", left_on=["trace_id", "turn_span_id"], right_index=True)
    for name in _SHORT.values():
        for edge in ("start", "end"):
            col = f"{name}_{edge}_ns"
            if col not in out:
                out[col] = np.nan

    # Span ids of the llm and tts spans, to find their first-token / first-audio events.
    ids = stages.set_index(["trace_id", "parent_span_id", "name"])["span_id"]
    for span_name, col, event in (
        (sc.SPAN_LLM, "first_token_ns", sc.EVENT_FIRST_TOKEN),
        (sc.SPAN_TTS, "first_audio_ns", sc.EVENT_TTS_FIRST_AUDIO),
    ):
        keyed = ids.xs(span_name, level="name") if span_name in stages["name"].values else pd.Series(dtype=object)
        first = _first_event_times(tables.events, event)
        span_ids = keyed.reindex(pd.MultiIndex.from_arrays([out["trace_id"], out["turn_span_id"]])).to_numpy()
        out[col] = first.reindex(pd.MultiIndex.from_arrays([out["trace_id"], span_ids])).to_numpy()

    # Text and counts from the stage spans' attributes.
    attrs = stages.set_index(["trace_id", "parent_span_id", "name"])["attributes"]
    out["transcript"] = _attr(attrs, out, sc.SPAN_ASR, sc.ATTR_ASR_TRANSCRIPT)
    out["output_tokens"] = _attr(attrs, out, sc.SPAN_LLM, sc.ATTR_GENAI_OUTPUT_TOKENS)

    # Conversation start, for "where in the call" (seconds from call time zero).
    conv = spans[spans["name"] == sc.SPAN_CONVERSATION].set_index(["trace_id", "span_id"])
    conv_start = conv["start_ns"].reindex(pd.MultiIndex.from_arrays([out["trace_id"], out["conversation_span_id"]]))
    conv_name = conv["attributes"].reindex(pd.MultiIndex.from_arrays([out["trace_id"], out["conversation_span_id"]]))
    out["conversation"] = [
        (a.get(sc.ATTR_CALL_FILE) or a.get(sc.ATTR_CONVERSATION_ID)) if isinstance(a, dict) else tid[:8]
        for a, tid in zip(conv_name.to_numpy(), out["trace_id"])
    ]

    speech_end = out["user_end_ns"]
    out["at_s"] = (speech_end - conv_start.to_numpy()) / 1e9
    decided = out["endpoint_end_ns"]
    out["endpointing_ms"] = (decided - speech_end) / NS_PER_MS
    out["asr_final_ms"] = ((out["asr_end_ns"] - decided) / NS_PER_MS).clip(lower=0)
    out["ttft_ms"] = (out["first_token_ns"] - out["llm_start_ns"]) / NS_PER_MS
    out["first_sentence_ms"] = (out["tts_start_ns"] - out["first_token_ns"]) / NS_PER_MS
    out["tts_ttfb_ms"] = (out["first_audio_ns"] - out["tts_start_ns"]) / NS_PER_MS
    out["v2v_ms"] = (out["bot_start_ns"] - speech_end) / NS_PER_MS
    out["turn_e2e_ms"] = (out["bot_end_ns"] - speech_end) / NS_PER_MS
    return out.sort_values(["conversation", "turn"], kind="stable").reset_index(drop=True)


def _attr(attrs: pd.Series, out: pd.DataFrame, span_name: str, key: str) -> list:
    if attrs.empty:
        return [None] * len(out)
    index = pd.MultiIndex.from_arrays([out["trace_id"], out["turn_span_id"], [span_name] * len(out)])
    return [a.get(key) if isinstance(a, dict) else None for a in attrs.reindex(index).to_numpy()]


PERCENTILES = (50, 90, 95, 99)
MIN_TURNS_FOR = {50: 1, 90: 10, 95: 20, 99: 100}
"""Below this many turns a percentile is close to the maximum; renderers mark it."""


def percentiles(turns: pd.DataFrame, metrics: list[str] = STAGE_METRICS) -> pd.DataFrame:
    """n and p50/p90/p95/p99 of each metric over the turns that have it (NaN = stage missing)."""
    rows = []
    for metric in metrics:
        values = pd.to_numeric(turns[metric], errors="coerce").dropna().to_numpy() if metric in turns else np.array([])
        row = {"metric": metric, "n": len(values)}
        for p in PERCENTILES:
            row[f"p{p}"] = float(np.percentile(values, p)) if len(values) else np.nan
        rows.append(row)
    return pd.DataFrame(rows).set_index("metric")
