"""Turn a finished TurnRecord into the turn's span tree (DESIGN.md's span model).

Spans are written with explicit start and end times from the run's one clock, once the
turn is over, so every stage span starts and ends at the moment it happened even when the
moment is only known later (speech end = VAD stop minus its silence window).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode, Tracer

from voicetrace import semconv as sc
from voicetrace.capture.turn_record import TurnRecord

_NS_PER_MS = 1_000_000


def _ms(ns: int) -> float:
    return ns / _NS_PER_MS


class SpanBuilder:
    def __init__(
        self,
        tracer: Tracer,
        to_wall_ns: Callable[[int], int],
        capture_content: bool = False,
        stage_attributes: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self._tracer = tracer
        self._wall = to_wall_ns
        self._capture_content = capture_content
        # Static per-stage attributes (model names, voice, VAD settings) from the pipeline config.
        self._stage_attributes = {k: dict(v) for k, v in (stage_attributes or {}).items()}

    def _span(
        self,
        name: str,
        parent: Context,
        start_ns: int,
        end_ns: int,
        attributes: Mapping[str, Any],
        events: Iterable[tuple[str, int, Mapping[str, Any]]] = (),
        error: str | None = None,
    ):
        attrs = {**self._stage_attributes.get(name, {}), **{k: v for k, v in attributes.items() if v is not None}}
        span = self._tracer.start_span(name, context=parent, start_time=self._wall(start_ns), attributes=attrs)
        for event_name, time_ns, event_attrs in events:
            span.add_event(event_name, attributes=dict(event_attrs), timestamp=self._wall(time_ns))
        if error:
            span.set_status(Status(StatusCode.ERROR, error))
        # A stage can't end before it starts; clamp rather than write a negative span.
        span.end(end_time=self._wall(max(end_ns, start_ns)))
        return span

    def emit_turn(self, rec: TurnRecord, conversation: Context) -> None:
        end_ns = max(
            t
            for t in (
                rec.speech_start_ns,
                rec.speech_end_ns,
                rec.decided_ns,
                rec.committed_ns,
                rec.asr_end_ns,
                rec.llm_end_ns,
                rec.token_times_ns[-1] if rec.token_times_ns else None,
                rec.tts_last_audio_ns,
                rec.bot_end_ns,
            )
            if t is not None
        )
        turn_attrs: dict[str, Any] = {
            sc.ATTR_TURN_NUMBER: rec.number,
            sc.ATTR_TURN_INTERRUPTED: rec.interrupted,
            sc.ATTR_LANGUAGE: rec.language,
        }
        turn = self._tracer.start_span(
            sc.SPAN_TURN, context=conversation, start_time=self._wall(rec.speech_start_ns), attributes=turn_attrs
        )
        ctx = trace.set_span_in_context(turn)
        self._user_speech(rec, ctx)
        self._endpointing(rec, ctx)
        self._asr(rec, ctx)
        self._llm(rec, ctx)
        self._tts(rec, ctx)
        self._bot_speech(rec, ctx)
        turn.end(end_time=self._wall(end_ns))

    def _user_speech(self, rec: TurnRecord, ctx: Context) -> None:
        if rec.speech_end_ns is None:
            return
        self._span(
            sc.SPAN_USER_SPEECH,
            ctx,
            rec.speech_start_ns,
            rec.speech_end_ns,
            {sc.ATTR_VAD_START_SECS: rec.vad_start_secs, sc.ATTR_VAD_SEGMENTS: rec.vad_segments},
        )

    def _endpointing(self, rec: TurnRecord, ctx: Context) -> None:
        decided = rec.decided_ns if rec.decided_ns is not None else rec.committed_ns
        if rec.speech_end_ns is None or decided is None:
            return
        events = [
            ("turn.incomplete", t, {sc.ATTR_TURN_PROBABILITY: p}) for t, p in rec.incomplete_decisions_ns
        ]
        self._span(
            sc.SPAN_ENDPOINTING,
            ctx,
            rec.speech_end_ns,
            decided,
            {
                sc.ATTR_VAD_STOP_SECS: rec.vad_stop_secs,
                sc.ATTR_TURN_PROBABILITY: rec.turn_probability,
                sc.ATTR_TURN_COMPLETE: rec.turn_is_complete,
                sc.ATTR_TURN_INFERENCE_MS: rec.turn_inference_ms,
            },
            events,
        )

    def _asr(self, rec: TurnRecord, ctx: Context) -> None:
        if rec.asr_start_ns is None or rec.asr_end_ns is None:
            return
        attrs: dict[str, Any] = {sc.ATTR_ASR_TRANSCRIPT_CHARS: len(rec.transcript), sc.ATTR_LANGUAGE: rec.language}
        if self._capture_content:
            attrs[sc.ATTR_ASR_TRANSCRIPT] = rec.transcript
        self._span(sc.SPAN_ASR, ctx, rec.asr_start_ns, rec.asr_end_ns, attrs)

    def _llm(self, rec: TurnRecord, ctx: Context) -> None:
        if rec.llm_start_ns is None:
            return
        tokens = rec.token_times_ns
        end = rec.llm_end_ns if rec.llm_end_ns is not None else (tokens[-1] if tokens else rec.llm_start_ns)
        attrs: dict[str, Any] = {
            sc.ATTR_GENAI_OPERATION: "chat",
            sc.ATTR_GENAI_OUTPUT_TOKENS: len(tokens),
            sc.ATTR_LLM_OUTPUT_CHARS: len(rec.llm_text),
        }
        events: list[tuple[str, int, Mapping[str, Any]]] = []
        if tokens:
            attrs[sc.ATTR_LLM_TTFT_MS] = _ms(tokens[0] - rec.llm_start_ns)
            if len(tokens) > 1:
                attrs[sc.ATTR_LLM_TPOT_MS] = _ms(tokens[-1] - tokens[0]) / (len(tokens) - 1)
            events.append((sc.EVENT_FIRST_TOKEN, tokens[0], {}))
            events.extend((sc.EVENT_TOKEN, t, {sc.ATTR_TOKEN_COUNT: 1}) for t in tokens)
        if self._capture_content:
            attrs[sc.ATTR_LLM_OUTPUT] = rec.llm_text
        error = None if tokens or rec.interrupted else "no content tokens received"
        self._span(sc.SPAN_LLM, ctx, rec.llm_start_ns, end, attrs, events, error)

    def _tts(self, rec: TurnRecord, ctx: Context) -> None:
        if rec.tts_start_ns is None:
            return
        end = rec.tts_last_audio_ns or rec.tts_stopped_ns or rec.tts_start_ns
        attrs: dict[str, Any] = {
            sc.ATTR_TTS_CHARACTERS: rec.tts_characters,
            sc.ATTR_TTS_AUDIO_MS: rec.tts_audio_ms,
        }
        events: list[tuple[str, int, Mapping[str, Any]]] = []
        if rec.tts_first_audio_ns is not None:
            attrs[sc.ATTR_TTS_TTFB_MS] = _ms(rec.tts_first_audio_ns - rec.tts_start_ns)
            events.append((sc.EVENT_TTS_FIRST_AUDIO, rec.tts_first_audio_ns, {}))
        self._span(sc.SPAN_TTS, ctx, rec.tts_start_ns, end, attrs, events)

    def _bot_speech(self, rec: TurnRecord, ctx: Context) -> None:
        if rec.bot_start_ns is None:
            return
        end = rec.bot_end_ns if rec.bot_end_ns is not None else rec.bot_start_ns
        self._span(
            sc.SPAN_BOT_SPEECH,
            ctx,
            rec.bot_start_ns,
            end,
            {sc.ATTR_BOT_INTERRUPTED: rec.interrupted, sc.ATTR_BOT_AUDIO_MS: _ms(end - rec.bot_start_ns)},
        )
