"""Synthetic traces in OTLP JSON lines, with every milestone placed by hand (ms), for report tests."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from voicetrace import semconv as sc

MS = 1_000_000
T0 = 1_800_000_000_000_000_000  # epoch ns of call time zero
_ids = itertools.count(1)


def _id(n: int = 16) -> str:
    return f"{next(_ids):0{n}x}"


def _attrs(d: dict) -> list:
    out = []
    for k, v in d.items():
        if isinstance(v, bool):
            val = {"boolValue": v}
        elif isinstance(v, int):
            val = {"intValue": str(v)}
        elif isinstance(v, float):
            val = {"doubleValue": v}
        else:
            val = {"stringValue": str(v)}
        out.append({"key": k, "value": val})
    return out


@dataclass
class Turn:
    """Milestones in ms; ``at`` is the caller's speech end on the call's timeline."""

    at: float
    endpoint: float = 300
    asr_final: float = 400  # final transcript − turn decided (negative: ASR finished first)
    gap: float = 2  # LLM request − ready
    ttft: float = 180
    first_sentence: float = 30
    tts_ttfb: float = 170
    transport: float = 10
    leading_silence: float | None = None  # bot audible − first bot frame played (voice.bot.audible)
    bot_ms: float = 2000
    tokens: int = 10
    itl: float = 20
    chunk_tokens: list | None = None  # tokens per token event (default 1 each)
    queue: float | None = None  # llm.server.queue at the request's start
    prefill: float | None = None  # llm.server.prefill ending at the first token
    tool: float | None = None  # tool.lookup inside the TTFT window
    language: str | None = None
    transcript: str | None = None
    input_tokens: int | None = None
    missing: set = field(default_factory=set)  # span names to leave out


def _span(trace, parent, name, start_ms, end_ms, attrs=None, events=()):
    return {"traceId": trace, "spanId": _id(), "parentSpanId": parent, "name": name, "kind": 1,
            "startTimeUnixNano": str(T0 + round(start_ms * MS)), "endTimeUnixNano": str(T0 + round(end_ms * MS)),
            "attributes": _attrs(attrs or {}),
            "events": [{"name": n, "timeUnixNano": str(T0 + round(t * MS)), "attributes": _attrs(a)} for n, t, a in events]}


def call_spans(turns: list[Turn], call: str = "call.wav", end_ms: float | None = None) -> list[dict]:
    trace = _id(32)
    end = end_ms or (max((t.at for t in turns), default=0) + 10_000)
    conv = _span(trace, "", sc.SPAN_CONVERSATION, 0, end, {sc.ATTR_CALL_FILE: call, sc.ATTR_CONVERSATION_ID: call})
    spans = [conv]
    for number, t in enumerate(turns, start=1):
        decided = t.at + t.endpoint
        asr_end = decided + t.asr_final
        llm_start = max(decided, asr_end) + t.gap
        first_token = llm_start + t.ttft
        tts_start = first_token + t.first_sentence
        first_audio = tts_start + t.tts_ttfb
        bot_start = first_audio + t.transport
        bot_end = bot_start + t.bot_ms
        chunks = t.chunk_tokens or [1] * t.tokens
        token_times = [first_token] + [first_token + t.itl * sum(chunks[1:i + 1]) for i in range(1, len(chunks))]
        turn_attrs = {sc.ATTR_TURN_NUMBER: number, sc.ATTR_TURN_INTERRUPTED: False}
        if t.language:
            turn_attrs[sc.ATTR_LANGUAGE] = t.language
        turn = _span(trace, conv["spanId"], sc.SPAN_TURN, t.at - 1500, bot_end, turn_attrs)
        spans.append(turn)
        tid = turn["spanId"]
        asr_attrs = {sc.ATTR_ASR_TRANSCRIPT_CHARS: len(t.transcript or "")}
        if t.transcript is not None:
            asr_attrs[sc.ATTR_ASR_TRANSCRIPT] = t.transcript
        llm_attrs = {sc.ATTR_GENAI_OUTPUT_TOKENS: sum(chunks)}
        if t.input_tokens is not None:
            llm_attrs[sc.ATTR_GENAI_INPUT_TOKENS] = t.input_tokens
        token_events = [(sc.EVENT_FIRST_TOKEN, first_token, {})] + [
            (sc.EVENT_TOKEN, tt, {sc.ATTR_TOKEN_COUNT: k}) for tt, k in zip(token_times, chunks)]
        stage = {
            sc.SPAN_USER_SPEECH: _span(trace, tid, sc.SPAN_USER_SPEECH, t.at - 1500, t.at),
            sc.SPAN_ENDPOINTING: _span(trace, tid, sc.SPAN_ENDPOINTING, t.at, decided),
            sc.SPAN_ASR: _span(trace, tid, sc.SPAN_ASR, t.at + 100, asr_end, asr_attrs),
            sc.SPAN_LLM: _span(trace, tid, sc.SPAN_LLM, llm_start, token_times[-1], llm_attrs, token_events),
            sc.SPAN_TTS: _span(trace, tid, sc.SPAN_TTS, tts_start, bot_end - 100, {},
                               [(sc.EVENT_TTS_FIRST_AUDIO, first_audio, {})]),
            sc.SPAN_BOT_SPEECH: _span(trace, tid, sc.SPAN_BOT_SPEECH, bot_start, bot_end, {}, [] if t.leading_silence is None
                                      else [(sc.EVENT_BOT_AUDIBLE, bot_start + t.leading_silence, {})]),
        }
        for name, span in stage.items():
            if name not in t.missing:
                spans.append(span)
        llm_id = stage[sc.SPAN_LLM]["spanId"]
        if t.queue is not None:
            spans.append(_span(trace, llm_id, "llm.server.queue", llm_start, llm_start + t.queue))
        if t.prefill is not None:
            spans.append(_span(trace, llm_id, "llm.server.prefill", first_token - t.prefill, first_token,
                               {"llama_cpp.prompt_n": 50, "llama_cpp.cache_n": 10}))
        if t.tool is not None:
            spans.append(_span(trace, tid, "tool.lookup", llm_start + 5, llm_start + 5 + t.tool, {"gen_ai.tool.name": "lookup"}))
    return spans


def write_trace(path: Path, calls: list[list[dict]], extra_lines: list[str] = ()) -> Path:
    """One OTLP export request per call, one line each."""
    with open(path, "wb") as f:
        for spans in calls:
            request = {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "voicetrace"})},
                                          "scopeSpans": [{"scope": {"name": "voicetrace"}, "spans": spans}]}]}
            f.write(orjson.dumps(request) + b"\n")
        for line in extra_lines:
            f.write(line.encode() + b"\n")
    return path


def many_calls(n_calls: int, turns_per_call: int, seed: int = 7, transcript: str | None = None) -> list[list[dict]]:
    import random

    rng = random.Random(seed)
    calls = []
    for c in range(n_calls):
        turns = [Turn(at=2000 + 8000 * i, endpoint=rng.uniform(150, 500), asr_final=rng.uniform(-100, 600),
                      ttft=rng.uniform(80, 600), first_sentence=rng.uniform(20, 400), tts_ttfb=rng.uniform(80, 700),
                      transport=rng.uniform(0, 20), tokens=rng.randint(3, 30), itl=rng.uniform(10, 40),
                      language=rng.choice(["en", "de"]), transcript=transcript, input_tokens=100 + 40 * i)
                 for i in range(turns_per_call)]
        calls.append(call_spans(turns, call=f"call-{c:04d}.wav"))
    return calls
