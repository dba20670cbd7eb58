"""Turn a finished TurnRecord into the turn's span tree (DESIGN.md's span model).

Most spans are written once the turn is over, with explicit start and end times from the
run's one clock, so every stage starts and ends at the moment it happened even when that
moment is only known later (speech end = VAD stop minus its silence window). The ``turn``
and ``llm`` spans are started live, because an LLM request carries their ids (traceparent).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from voicetrace import semconv as sc
from voicetrace.capture.content import ContentPolicy
from voicetrace.capture.llm_spans import call_attributes, call_error, error_status, llm_stage_attributes
from voicetrace.capture.sinks import LLMCall, ToolRun
from voicetrace.capture.turn_record import TurnRecord

_NS_PER_MS = 1_000_000
# llama.cpp's decode time includes sampling the first token, which the client sees as the end
# of prefill: a fit within a millisecond is a fit, not a clock problem.
_CLAMP_TOLERANCE_NS = 2 * _NS_PER_MS

Event = tuple[str, int, Mapping[str, Any]]
_NO_ATTRIBUTES: Mapping[str, Any] = {}


def _ms(ns: int) -> float:
    return ns / _NS_PER_MS


def _s_to_ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def traceparent_of(span: Span) -> str | None:
    """The W3C traceparent header value for ``span`` (OpenTelemetry's own propagator)."""
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent")


def _clean(attributes: Mapping[str, Any]) -> dict:
    return {k: v for k, v in attributes.items() if v is not None}


class SpanBuilder:
    def __init__(
        self,
        tracer: Tracer,
        to_wall_ns: Callable[[int], int],
        content: ContentPolicy | None = None,
        stage_attributes: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._tracer = tracer
        self._wall = to_wall_ns
        self._content = content or ContentPolicy()
        # Static per-stage attributes (model names, voice, VAD settings) from the pipeline config.
        self._stage_attributes = {k: dict(v) for k, v in (stage_attributes or {}).items()}
        self._llm_attributes = llm_stage_attributes(self._stage_attributes.pop(sc.SPAN_LLM, {}))

    # --- live spans ---------------------------------------------------------------------
    def start_turn_span(self, rec: TurnRecord, conversation: Context | None) -> Span:
        return self._tracer.start_span(
            sc.SPAN_TURN, context=conversation, start_time=self._wall(rec.speech_start_ns),
            attributes={sc.ATTR_TURN_NUMBER: rec.number},
        )

    def start_llm_span(self, request_ns: int, parent: Context) -> Span:
        """A GenAI client span (kind CLIENT, operation ``chat``), named ``llm`` (see semconv)."""
        return self._tracer.start_span(
            sc.SPAN_LLM, context=parent, kind=SpanKind.CLIENT, start_time=self._wall(request_ns),
            attributes=self._llm_attributes,
        )

    # --- finished spans -----------------------------------------------------------------
    def _finish(self, span: Span, start_ns: int, end_ns: int, attributes: Mapping[str, Any],
                events: Iterable[Event] = (), error: str | None = None) -> Span:
        span.set_attributes(_clean(attributes))
        wall = self._wall
        for event_name, time_ns, event_attrs in events:
            span.add_event(event_name, attributes=event_attrs or None, timestamp=wall(time_ns))
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
        # A stage can't end before it starts; clamp rather than write a negative span.
        span.end(end_time=self._wall(max(end_ns, start_ns)))
        return span

    def _span(self, name: str, parent: Context, start_ns: int, end_ns: int, attributes: Mapping[str, Any],
              events: Iterable[Event] = (), error: str | None = None) -> Span:
        attrs = {**self._stage_attributes.get(name, {}), **_clean(attributes)}
        span = self._tracer.start_span(name, context=parent, start_time=self._wall(start_ns), attributes=attrs)
        return self._finish(span, start_ns, end_ns, {}, events, error)

    def emit_span(self, name: str, parent: Context | None, start_ns: int, end_ns: int,
                  attributes: Mapping[str, Any]) -> Span:
        """A finished span outside the turn model (e.g. ``loop.blocked`` under the conversation)."""
        return self._span(name, parent, start_ns, end_ns, attributes)

    def emit_turn(self, rec: TurnRecord) -> None:
        calls = rec.llm_calls_to_emit
        end_ns = max(
            t
            for t in (
                rec.speech_start_ns, rec.speech_end_ns, rec.decided_ns, rec.committed_ns, rec.asr_end_ns,
                rec.llm_end_ns, rec.tts_last_audio_ns, rec.bot_end_ns,
                *(c.end_ns for c in calls), *(r.end_ns for r in rec.tools),
            )
            if t is not None
        )
        ctx = trace.set_span_in_context(rec.span)
        self._user_speech(rec, ctx)
        self._endpointing(rec, ctx)
        self._asr(rec, ctx)
        for i, call in enumerate(calls):
            self._llm(call, rec, ctx, superseded=i < len(calls) - 1)
        for run in rec.tools:
            self.emit_tool(run, ctx)
        self._tts(rec, ctx)
        self._bot_speech(rec, calls, ctx)
        vad_events = [(sc.EVENT_VAD_STARTED if speaking else sc.EVENT_VAD_STOPPED, t, {}) for t, speaking in rec.vad_events]
        self._finish(
            rec.span, rec.speech_start_ns, end_ns,
            {sc.ATTR_TURN_INTERRUPTED: rec.interrupted, sc.ATTR_LANGUAGE: rec.language},
            vad_events,
        )

    def _user_speech(self, rec: TurnRecord, ctx: Context) -> None:
        if rec.speech_end_ns is None:
            return
        lag = {
            sc.ATTR_VAD_START_LAG_MS: None if rec.vad_onset_ns is None else _ms(rec.vad_onset_ns - rec.speech_start_ns),
            sc.ATTR_VAD_END_LAG_MS: None if rec.vad_end_ns is None else _ms(rec.vad_end_ns - rec.speech_end_ns),
        }
        self._span(
            sc.SPAN_USER_SPEECH, ctx, rec.speech_start_ns, rec.speech_end_ns,
            {sc.ATTR_VAD_START_SECS: rec.vad_start_secs, sc.ATTR_VAD_SEGMENTS: rec.vad_segments,
             sc.ATTR_SPEECH_START_SOURCE: rec.start_source, sc.ATTR_SPEECH_END_SOURCE: rec.end_source, **lag},
        )

    def _endpointing(self, rec: TurnRecord, ctx: Context) -> None:
        decided = rec.decided_ns if rec.decided_ns is not None else rec.committed_ns
        if rec.speech_end_ns is None or decided is None:
            return
        events = [(sc.EVENT_TURN_INCOMPLETE, t, {sc.ATTR_TURN_PROBABILITY: p}) for t, p in rec.incomplete_decisions_ns]
        self._span(
            sc.SPAN_ENDPOINTING, ctx, rec.speech_end_ns, decided,
            {
                sc.ATTR_VAD_STOP_SECS: rec.vad_stop_secs,
                sc.ATTR_TURN_PROBABILITY: rec.turn_probability,
                sc.ATTR_TURN_COMPLETE: rec.turn_is_complete,
                sc.ATTR_TURN_INFERENCE_MS: rec.turn_inference_ms,
                sc.ATTR_TURN_DECISION: "complete" if rec.turn_is_complete else "silence_fallback",
            },
            events,
        )

    def _asr(self, rec: TurnRecord, ctx: Context) -> None:
        if rec.asr_start_ns is None or rec.asr_end_ns is None:
            return
        events = [
            (sc.EVENT_ASR_INTERIM, t, _clean({sc.ATTR_ASR_TRANSCRIPT: self._content.text(text), sc.ATTR_ASR_TRANSCRIPT_CHARS: len(text)}))
            for t, text in rec.interim_ns
        ]
        self._span(
            sc.SPAN_ASR, ctx, rec.asr_start_ns, rec.asr_end_ns,
            {
                sc.ATTR_ASR_TRANSCRIPT_CHARS: len(rec.transcript),
                sc.ATTR_ASR_TRANSCRIPT: self._content.text(rec.transcript),
                sc.ATTR_LANGUAGE: rec.language,
                sc.ATTR_ASR_MODE: "streaming" if rec.asr_stats else "segmented",
                sc.ATTR_ASR_AUDIO_MS: _s_to_ms(rec.asr_stats.get("audio_s")),
                sc.ATTR_ASR_TAIL_MS: _s_to_ms(rec.asr_stats.get("tail_s")),
                sc.ATTR_ASR_FINALIZE_MS: rec.asr_stats.get("finalize_ms"),
                sc.ATTR_ASR_INTERIMS: len(rec.interim_ns),
            },
            events,
        )

    def _llm(self, call: LLMCall, rec: TurnRecord, ctx: Context, superseded: bool = False) -> None:
        tokens = call.token_times_ns
        end = call.end_ns if call.end_ns is not None else (tokens[-1] if tokens else call.request_ns)
        attrs = call_attributes(call, self._content)
        events: list[Event] = []
        if tokens:
            events.append((sc.EVENT_FIRST_TOKEN, tokens[0], {}))
            # Only multi-token chunks carry a count (readers take 1 when it is absent): attributes
            # are most of an event's cost, and this path runs once per token.
            events.extend((sc.EVENT_TOKEN, t, {sc.ATTR_TOKEN_COUNT: c} if c > 1 else _NO_ATTRIBUTES)
                          for t, c in zip(tokens, call.token_counts))
        error, attrs[sc.ATTR_ERROR_TYPE] = call_error(call, rec.errors.get("llm"), interrupted=rec.interrupted,
                                                      superseded=superseded, content=self._content)
        if call.span is None:
            call.span = self.start_llm_span(call.request_ns, ctx)
        span = self._finish(call.span, call.request_ns, end, attrs, events, error)
        if call.server_timings and tokens:
            self._llama_server_spans(call, span, end)

    def _llama_server_spans(self, call: LLMCall, llm_span: Span, end_ns: int) -> None:
        """llama.cpp reports durations, not clock times: anchor prefill to end at the first token
        and decode to end at the last, on the client's timeline, inside the client span."""
        timings = call.server_timings or {}
        ctx = trace.set_span_in_context(llm_span)
        prompt_ns = int(float(timings.get("prompt_ms", 0)) * _NS_PER_MS)
        decode_ns = int(float(timings.get("predicted_ms", 0)) * _NS_PER_MS)
        first, last = call.token_times_ns[0], call.token_times_ns[-1]
        prefill_start = max(call.request_ns, first - prompt_ns)
        self._span(
            sc.SPAN_LLM_PREFILL, ctx, prefill_start, first,
            {
                sc.ATTR_SERVER_PROMPT_N: timings.get("prompt_n"),
                sc.ATTR_SERVER_CACHE_N: timings.get("cache_n"),
                sc.ATTR_SERVER_PROMPT_MS: timings.get("prompt_ms"),
                sc.ATTR_SERVER_CLAMPED: call.request_ns - (first - prompt_ns) > _CLAMP_TOLERANCE_NS,
            },
        )
        decode_start = max(first, last - decode_ns)
        self._span(
            sc.SPAN_LLM_DECODE, ctx, decode_start, min(last, end_ns),
            {
                sc.ATTR_SERVER_PREDICTED_N: timings.get("predicted_n"),
                sc.ATTR_SERVER_PREDICTED_MS: timings.get("predicted_ms"),
                sc.ATTR_SERVER_CLAMPED: first - (last - decode_ns) > _CLAMP_TOLERANCE_NS,
            },
        )

    def emit_tool(self, run: ToolRun, ctx: Context) -> None:
        end = run.end_ns if run.end_ns is not None else run.start_ns
        self._span(
            sc.SPAN_TOOL_PREFIX + run.name, ctx, run.start_ns, end,
            {
                sc.ATTR_TOOL_NAME: run.name,
                sc.ATTR_TOOL_TRIGGER: run.trigger,
                sc.ATTR_TOOL_RESULT_CHARS: run.result_chars,
                sc.ATTR_TOOL_ARGUMENTS: self._content.text(run.arguments),
                sc.ATTR_ERROR_TYPE: run.error,
            },
            error=run.error,
        )

    def _error_text(self, error: tuple[int, str, str]) -> str:
        _, kind, message = error
        return error_status(kind, message, self._content)

    def _tts(self, rec: TurnRecord, ctx: Context) -> None:
        error = rec.errors.get("tts")
        if rec.tts_start_ns is None and error is not None:
            # TTS failed before it produced anything: a zero-length span at the failure, with the error.
            self._span(sc.SPAN_TTS, ctx, error[0], error[0], {sc.ATTR_ERROR_TYPE: error[1]}, (), self._error_text(error))
            return
        if rec.tts_start_ns is None:
            return
        end = rec.tts_last_audio_ns or rec.tts_stopped_ns or rec.tts_start_ns
        attrs: dict[str, Any] = {sc.ATTR_TTS_CHARACTERS: rec.tts_characters, sc.ATTR_TTS_AUDIO_MS: rec.tts_audio_ms}
        events: list[Event] = []
        if rec.tts_first_audio_ns is not None:
            attrs[sc.ATTR_TTS_TTFB_MS] = _ms(rec.tts_first_audio_ns - rec.tts_start_ns)
            events.append((sc.EVENT_TTS_FIRST_AUDIO, rec.tts_first_audio_ns, {}))
        if error is not None:
            attrs[sc.ATTR_ERROR_TYPE] = error[1]
        self._span(sc.SPAN_TTS, ctx, rec.tts_start_ns, end, attrs, events,
                   self._error_text(error) if error is not None else None)

    def _bot_speech(self, rec: TurnRecord, calls: list[LLMCall], ctx: Context) -> None:
        if rec.bot_start_ns is None:
            return
        end = rec.bot_end_ns if rec.bot_end_ns is not None else rec.bot_start_ns
        played_ms = _ms(rec.bot_audio_ns)  # a reply that paused and resumed: the pause is not audio
        attrs: dict[str, Any] = {sc.ATTR_BOT_INTERRUPTED: rec.interrupted, sc.ATTR_BOT_AUDIO_MS: played_ms}
        events: list[Event] = []
        if rec.bot_audible_ns is not None:
            attrs[sc.ATTR_BOT_LEADING_SILENCE_MS] = _ms(rec.bot_audible_ns - rec.bot_start_ns)
            events.append((sc.EVENT_BOT_AUDIBLE, rec.bot_audible_ns, {}))
        if rec.interrupted and rec.interrupted_by_onset_ns is not None:
            attrs[sc.ATTR_BOT_INTERRUPTION_LATENCY_MS] = _ms(end - rec.interrupted_by_onset_ns)
            # Tokens generated but never heard, pro rata to the synthesised audio that never played.
            generated = sum(sum(c.token_counts) for c in calls)
            played_share = min(1.0, played_ms / rec.tts_audio_ms) if rec.tts_audio_ms else 0.0
            attrs[sc.ATTR_BOT_UNSPOKEN_TOKENS] = round(generated * (1.0 - played_share))
        self._span(sc.SPAN_BOT_SPEECH, ctx, rec.bot_start_ns, end, attrs, events)
