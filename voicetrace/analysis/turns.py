"""Spans → one row per turn: milestones and the registry's span metrics (``analysis/metrics``, ms).

Pure and vectorised: DataFrames in, DataFrame out; a stage that is missing gives NaN
(shown as missing), never zero. Instants are kept as nullable ``Int64`` epoch nanoseconds
(``*_ns``) so differences are exact; metrics are float milliseconds (``*_ms``).

A turn may hold several spans of one stage (pipecat's tracing opens one ``tts`` per sentence,
a tool call makes a second ``llm`` request): a stage starts at its first span's start and ends
at its last span's end; TTFT is measured on the request that produced the first content token.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.analysis.metrics import REGISTRY, TURN_METRICS
from voicetrace.traces.tables import SpanTables

NS_PER_MS = 1_000_000

_SHORT = {
    sc.SPAN_USER_SPEECH: "user",
    sc.SPAN_ENDPOINTING: "endpoint",
    sc.SPAN_ASR: "asr",
    sc.SPAN_LLM: "llm",
    sc.SPAN_TTS: "tts",
    sc.SPAN_BOT_SPEECH: "bot",
}
KEY = ["trace_id", "turn_span_id"]

TURN_COLUMNS = (
    ["trace_id", "turn_span_id", "conversation_span_id", "conversation", "turn", "interrupted", "language", "at_s",
     "transcript", "llm_output", "input_tokens"]
    + [f"{short}_{edge}_ns" for short in _SHORT.values() for edge in ("start", "end")]
    + ["first_token_ns", "first_token_llm_start_ns", "first_audio_ns", "bot_audible_ns", "bot_onset_ns"]
    + list(TURN_METRICS)
)
"""The columns of ``turn_metrics``: turn identity, milestones (``*_ns``), and the registry's span metrics."""


def _ms(delta: pd.Series) -> np.ndarray:
    """Int64 nanoseconds (nullable) → float milliseconds with NaN for missing."""
    return delta.to_numpy(dtype="float64", na_value=np.nan) / NS_PER_MS


def stage_spans(spans: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """The spans directly under each turn (any name), with the turn's key columns."""
    keys = turns[["trace_id", "span_id"]].rename(columns={"span_id": "turn_span_id"})
    kids = spans.merge(keys, left_on=["trace_id", "parent_span_id"], right_on=["trace_id", "turn_span_id"])
    return kids


def _first_events(events: pd.DataFrame, name: str) -> pd.DataFrame:
    hits = events[events["name"] == name]
    return hits.groupby(["trace_id", "span_id"], as_index=False)["time_ns"].min()


def _first_attr(kids: pd.DataFrame, span_name: str, key: str, out: pd.DataFrame) -> list:
    """Attribute ``key`` of the first ``span_name`` span (by start) of each turn that has it."""
    rows = kids[kids["name"] == span_name]
    if rows.empty:
        return [None] * len(out)
    values = pd.Series([a.get(key) if isinstance(a, dict) else None for a in rows["attributes"]], index=rows.index)
    rows = rows.assign(_v=values).dropna(subset=["_v"]).sort_values("start_ns").drop_duplicates(KEY)
    found = rows.set_index(KEY)["_v"]
    return list(found.reindex(pd.MultiIndex.from_frame(out[KEY])).to_numpy())


def turn_metrics(tables: SpanTables) -> pd.DataFrame:
    spans = tables.spans
    turns = spans[spans["name"] == sc.SPAN_TURN]
    if turns.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c.endswith("_ms") else object) for c in TURN_COLUMNS})

    attrs = turns["attributes"].to_numpy()
    out = pd.DataFrame(
        {
            "trace_id": turns["trace_id"].to_numpy(),
            "turn_span_id": turns["span_id"].to_numpy(),
            "conversation_span_id": turns["parent_span_id"].to_numpy(),
            "turn": [a.get(sc.ATTR_TURN_NUMBER) for a in attrs],
            "interrupted": [bool(a.get(sc.ATTR_TURN_INTERRUPTED, False)) for a in attrs],
            "language": [a.get(sc.ATTR_LANGUAGE) for a in attrs],
            "reported_user_bot_ms": [
                a["turn.user_bot_latency_seconds"] * 1000.0 if "turn.user_bot_latency_seconds" in a else np.nan
                for a in attrs
            ],
        }
    )

    # Each stage: first span's start, last span's end, per turn (exact Int64 nanoseconds).
    kids = stage_spans(spans, turns)
    stages = kids[kids["name"].isin(list(_SHORT))]
    edges = stages.astype({"start_ns": "Int64", "end_ns": "Int64"}).groupby(KEY + ["name"]).agg(
        start_ns=("start_ns", "min"), end_ns=("end_ns", "max")
    )
    wide = edges.unstack("name")
    wide.columns = [f"{_SHORT[name]}_{edge.replace('_ns', '')}_ns" for edge, name in wide.columns]
    out = out.merge(wide, how="left", left_on=KEY, right_index=True)
    for name in _SHORT.values():
        for edge in ("start", "end"):
            col = f"{name}_{edge}_ns"
            out[col] = out[col].astype("Int64") if col in out else pd.array([pd.NA] * len(out), dtype="Int64")

    # First content token over the turn's llm requests, and the start of the request that carried it.
    llm = stages[stages["name"] == sc.SPAN_LLM][KEY + ["span_id", "start_ns"]]
    tok = _first_events(tables.events, sc.EVENT_FIRST_TOKEN).merge(llm, on=["trace_id", "span_id"])
    tok = tok.sort_values("time_ns").drop_duplicates(KEY).set_index(KEY)
    index = pd.MultiIndex.from_frame(out[KEY])
    out["first_token_ns"] = tok["time_ns"].astype("Int64").reindex(index).to_numpy()
    out["first_token_llm_start_ns"] = tok["start_ns"].astype("Int64").reindex(index).to_numpy()
    tts = stages[stages["name"] == sc.SPAN_TTS][KEY + ["span_id"]]
    aud = _first_events(tables.events, sc.EVENT_TTS_FIRST_AUDIO).merge(tts, on=["trace_id", "span_id"])
    aud = aud.groupby(KEY)["time_ns"].min()
    out["first_audio_ns"] = aud.astype("Int64").reindex(index).to_numpy()
    # The bot became audible (voice.bot.audible on bot.speech); traces without it: its first frame played.
    bot = stages[stages["name"] == sc.SPAN_BOT_SPEECH][KEY + ["span_id"]]
    audible = _first_events(tables.events, sc.EVENT_BOT_AUDIBLE).merge(bot, on=["trace_id", "span_id"])
    out["bot_audible_ns"] = audible.groupby(KEY)["time_ns"].min().astype("Int64").reindex(index).to_numpy()
    for col in ("first_token_ns", "first_token_llm_start_ns", "first_audio_ns", "bot_audible_ns"):
        out[col] = out[col].astype("Int64")
    out["bot_onset_ns"] = out["bot_audible_ns"].fillna(out["bot_start_ns"]).astype("Int64")

    # Text and counts from the stage spans' attributes.
    out["transcript"] = _first_attr(kids, sc.SPAN_ASR, sc.ATTR_ASR_TRANSCRIPT, out)
    out["llm_output"] = _first_attr(kids, sc.SPAN_LLM, sc.ATTR_LLM_OUTPUT, out)
    out["output_tokens"] = _first_attr(kids, sc.SPAN_LLM, sc.ATTR_GENAI_OUTPUT_TOKENS, out)
    out["input_tokens"] = _first_attr(kids, sc.SPAN_LLM, sc.ATTR_GENAI_INPUT_TOKENS, out)
    if out["language"].isna().any():  # language may sit on the asr span only
        asr_lang = _first_attr(kids, sc.SPAN_ASR, sc.ATTR_LANGUAGE, out)
        out["language"] = out["language"].where(out["language"].notna(), pd.Series(asr_lang, index=out.index))

    # Conversation: name and start, for "where in the call" (seconds from call time zero).
    conv = spans[spans["name"] == sc.SPAN_CONVERSATION].drop_duplicates(["trace_id", "span_id"]).set_index(["trace_id", "span_id"])
    conv_index = pd.MultiIndex.from_arrays([out["trace_id"], out["conversation_span_id"]])
    conv_start = conv["start_ns"].astype("Int64").reindex(conv_index).to_numpy()
    conv_attrs = conv["attributes"].reindex(conv_index).to_numpy()
    out["conversation"] = [
        (a.get(sc.ATTR_CALL_FILE) or a.get(sc.ATTR_CONVERSATION_ID) or tid[:8]) if isinstance(a, dict) else tid[:8]
        for a, tid in zip(conv_attrs, out["trace_id"])
    ]

    out["at_s"] = _ms(out["user_end_ns"] - pd.array(conv_start, dtype="Int64")) / 1000.0
    for m in REGISTRY:  # every span metric is "to − from" of two milestones (metrics.Metric.between)
        if m.computed_by == "turns" and m.between:
            start, end = m.between
            values = _ms(out[end] - out[start])
            out[m.column] = np.clip(values, 0, None) if m.non_negative else values
    out = out[TURN_COLUMNS]
    return out.sort_values(["conversation", "turn"], kind="stable").reset_index(drop=True)
