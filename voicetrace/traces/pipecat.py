"""pipecat's built-in tracing spans → voicetrace's span model.

pipecat (``enable_tracing=True, enable_turn_tracking=True``) records ``conversation → turn →
stt / llm / tts`` with ``metrics.ttfb`` in seconds and content attributes. Mapped here:

- ``stt`` → ``asr``; ``transcript`` → ``voice.asr.transcript``; ``language`` → ``voice.language``;
- ``llm``: ``output`` → ``voice.llm.output``; start + ``metrics.ttfb`` → a ``gen_ai.first_token`` event;
- ``tts``: start + ``metrics.ttfb`` → a ``tts.first_audio`` event.

pipecat has no speech, endpointing or playback spans, so endpointing and V2V stay missing (its own
``turn.user_bot_latency_seconds`` is shown as ``reported_user_bot_ms``, measured from its VAD stop).
"""

from __future__ import annotations

import pandas as pd

from voicetrace import semconv as sc
from voicetrace.traces.tables import SpanTables, events_frame

PIPECAT_STT = "stt"
_ATTR_MAP = {
    PIPECAT_STT: {"transcript": sc.ATTR_ASR_TRANSCRIPT, "language": sc.ATTR_LANGUAGE},
    sc.SPAN_LLM: {"output": sc.ATTR_LLM_OUTPUT},
    sc.SPAN_TTS: {"text": "voice.tts.text"},
}
_TTFB_EVENT = {sc.SPAN_LLM: sc.EVENT_FIRST_TOKEN, sc.SPAN_TTS: sc.EVENT_TTS_FIRST_AUDIO}


def is_pipecat(spans: pd.DataFrame) -> pd.Series:
    """Per span: does it belong to a trace written by pipecat's tracing (stt spans, no user.speech)?"""
    names = spans["name"]
    pipecat_traces = set(spans.loc[names == PIPECAT_STT, "trace_id"]) - set(spans.loc[names == sc.SPAN_USER_SPEECH, "trace_id"])
    return spans["trace_id"].isin(pipecat_traces)


def map_pipecat(tables: SpanTables) -> SpanTables:
    spans = tables.spans
    if spans.empty or not (spans["name"] == PIPECAT_STT).any():
        return tables
    mask = is_pipecat(spans) & spans["name"].isin(list(_ATTR_MAP))
    if not mask.any():
        return tables
    spans = spans.copy()
    rows = spans[mask]
    new_attrs = []
    new_events = []
    have = set(zip(tables.events["trace_id"], tables.events["span_id"], tables.events["name"]))
    for trace_id, span_id, name, start_ns, attrs in zip(rows["trace_id"], rows["span_id"], rows["name"],
                                                         rows["start_ns"], rows["attributes"]):
        attrs = dict(attrs or {})
        for theirs, ours in _ATTR_MAP[name].items():
            if theirs in attrs and ours not in attrs:
                attrs[ours] = attrs[theirs]
        ttfb_s = attrs.get("metrics.ttfb")
        event = _TTFB_EVENT.get(name)
        if event and isinstance(ttfb_s, (int, float)) and (trace_id, span_id, event) not in have:
            new_events.append((trace_id, span_id, event, int(start_ns + ttfb_s * 1e9), {"voice.derived_from": "metrics.ttfb"}))
        new_attrs.append(attrs)
    spans.loc[mask, "attributes"] = pd.Series(new_attrs, index=rows.index, dtype=object)
    spans.loc[mask & (spans["name"] == PIPECAT_STT), "name"] = sc.SPAN_ASR
    events = tables.events
    if new_events:
        events = pd.concat([events, events_frame(new_events)], ignore_index=True)
    return tables.replaced(spans, events)
