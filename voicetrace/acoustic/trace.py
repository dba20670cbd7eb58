"""An acoustic analysis → OTLP JSON lines: conversation → turn → one span per speech segment.

Caller segments are ``user.speech`` spans and agent segments ``bot.speech`` spans under their turn,
so ``voicetrace report`` / ``diff`` read the trace like a pipeline's: its V2V is the response gap.
Agent speech before the caller's first word sits under the conversation. Time zero (the
conversation's start) is the moment the analysis ran: offsets into the recording are exact, and
Jaeger's "last hour" finds it. Barge-ins are ``voice.barge_in`` events on their turn.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from voicetrace import semconv as sc
from voicetrace.acoustic.conversation import AGENT, CALLER, ConversationAnalysis
from voicetrace.otel.jsonl import OtlpJsonLinesExporter
from voicetrace.otel.resource import build_resource

_NS_PER_MS = 1_000_000
_LINE_SPANS = 512


def _ns(t0_ns: int, ms: float) -> int:
    return t0_ns + int(round(float(ms) * _NS_PER_MS))


def write_trace(analysis: ConversationAnalysis, path: Path, service_name: str = "voicetrace",
                conversation_id: str | None = None, t0_ns: int | None = None) -> int:
    """Write the spans to ``path`` (overwritten); returns the number of spans."""
    t0 = time.time_ns() if t0_ns is None else t0_ns
    meta = analysis.meta
    call_file = Path(meta.get("recording", "recording")).name
    conv_id = conversation_id or f"analyze-{Path(call_file).stem}-{t0 // 1_000_000_000}"
    resource = {sc.ATTR_CONVERSATION_ID: conv_id, sc.ATTR_CALL_FILE: call_file, sc.ATTR_PIPELINE: sc.PIPELINE_ACOUSTIC}
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=build_resource(service_name=service_name, attributes=resource))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("voicetrace.acoustic")

    conv = tracer.start_span(sc.SPAN_CONVERSATION, start_time=t0, attributes={
        **resource, sc.ATTR_CALL_DURATION_MS: analysis.duration_ms})
    conv_ctx = otel_trace.set_span_in_context(conv)
    caller, agent = analysis.caller_segments, analysis.agent_segments
    turns = analysis.turns
    starts = turns["caller_start_ms"].to_numpy() if len(turns) else np.zeros(0)
    # Which turn each segment belongs to (0 = none: agent speech before the caller's first word).
    caller_turn = np.searchsorted(starts, caller[:, 0], side="right") if len(caller) else np.zeros(0, int)
    agent_turn = np.searchsorted(starts, agent[:, 0], side="left") if len(agent) else np.zeros(0, int)

    def segment(name, speaker, channel, seg, ctx) -> None:
        span = tracer.start_span(name, context=ctx, start_time=_ns(t0, seg[0]), attributes={
            sc.ATTR_ACOUSTIC_SPEAKER: speaker, sc.ATTR_ACOUSTIC_CHANNEL: int(channel)})
        span.end(end_time=_ns(t0, seg[1]))

    for seg in agent[agent_turn == 0]:
        segment(sc.SPAN_BOT_SPEECH, AGENT, meta.get("agent_channel", 1), seg, conv_ctx)
    for row in turns.itertuples():
        mine_c, mine_a = caller[caller_turn == row.turn], agent[agent_turn == row.turn]
        barges = analysis.barge_ins[analysis.barge_ins["turn"] == row.turn]
        end_ms = max(mine_c[:, 1].max() if len(mine_c) else row.caller_end_ms, mine_a[:, 1].max() if len(mine_a) else 0)
        attrs = {sc.ATTR_TURN_NUMBER: int(row.turn), sc.ATTR_TURN_INTERRUPTED: bool(row.interrupted),
                 sc.ATTR_ACOUSTIC_OVERLAP_MS: float(barges["overlap_ms"].sum()) if len(barges) else 0.0}
        if row.response_gap_ms == row.response_gap_ms:
            attrs[sc.ATTR_ACOUSTIC_RESPONSE_GAP_MS] = float(row.response_gap_ms)
        turn = tracer.start_span(sc.SPAN_TURN, context=conv_ctx, start_time=_ns(t0, row.caller_start_ms), attributes=attrs)
        for b in barges.itertuples():
            turn.add_event(sc.EVENT_BARGE_IN, timestamp=_ns(t0, b.start_ms), attributes={
                sc.ATTR_BARGE_IN_INTERRUPTER: b.interrupter, sc.ATTR_BARGE_IN_STOPPED: b.stopped,
                sc.ATTR_ACOUSTIC_OVERLAP_MS: float(b.overlap_ms)})
        ctx = otel_trace.set_span_in_context(turn)
        for seg in mine_c:
            segment(sc.SPAN_USER_SPEECH, CALLER, meta.get("caller_channel", 0), seg, ctx)
        for seg in mine_a:
            segment(sc.SPAN_BOT_SPEECH, AGENT, meta.get("agent_channel", 1), seg, ctx)
        turn.end(end_time=_ns(t0, end_ms))
    conv.end(end_time=_ns(t0, analysis.duration_ms))
    provider.shutdown()

    # Collected first, written in start order: the file reads like a pipeline's, oldest first.
    spans = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time)
    out = OtlpJsonLinesExporter(path)
    try:
        for i in range(0, len(spans), _LINE_SPANS):
            if out.export(spans[i:i + _LINE_SPANS]) is not SpanExportResult.SUCCESS:
                raise OSError(f"could not write {path}")
    finally:
        out.shutdown()
    return out.spans_written
