"""(b) What capture costs, per span and per token event, in microseconds.

- chunk: the stream wrapper's work per streamed chunk, on the pipeline's path (parse the chunk,
  stamp it, keep the text);
- token event: writing one token event when the turn's spans are built (llm span with N tokens
  minus the same turn with none, divided by N), through the real SDK and batch processor;
- span: building a turn's stage spans, per span;
- export: encoding to OTLP JSON on the exporter's own thread, per token event (off the pipeline).

    .venv/bin/python bench/capture_cost.py [--tokens 500] [--turns 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from openai.types.chat import ChatCompletionChunk

from voicetrace.capture.content import ContentPolicy
from voicetrace.capture.llm_stream import LLMCall, TimedStream
from voicetrace.capture.span_builder import SpanBuilder
from voicetrace.capture.turn_record import TurnRecord
from voicetrace.clock import RunClock

MS = 1_000_000


def chunk(text: str) -> ChatCompletionChunk:
    return ChatCompletionChunk.model_validate({
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
        "timings": {"predicted_n": 1},
    })


class NullSink:
    def end_llm_call(self, call):
        pass


def per_chunk_us(n: int) -> float:
    chunks = [chunk(f" w{i}") for i in range(n)]
    call = LLMCall(request_ns=0)
    stream = TimedStream(None, call, NullSink())
    start = time.perf_counter_ns()
    for i, c in enumerate(chunks):
        stream._observe(c, i)
    return (time.perf_counter_ns() - start) / n / 1000


def turn(number: int, tokens: int) -> TurnRecord:
    t0 = number * 10_000 * MS
    rec = TurnRecord(number=number, speech_start_ns=t0, speech_end_ns=t0 + 2000 * MS, decided_ns=t0 + 2300 * MS,
                     committed_ns=t0 + 2500 * MS, asr_start_ns=t0, asr_end_ns=t0 + 2400 * MS, transcript="x" * 40,
                     tts_start_ns=t0 + 2800 * MS, tts_first_audio_ns=t0 + 2900 * MS, tts_last_audio_ns=t0 + 3000 * MS,
                     bot_start_ns=t0 + 2910 * MS, bot_end_ns=t0 + 6000 * MS, llm_end_ns=t0 + 3000 * MS)
    call = LLMCall(request_ns=t0 + 2510 * MS, prepare_ns=t0 + 2505 * MS, end_ns=t0 + 3000 * MS)
    for i in range(tokens):
        call.add_content(t0 + 2600 * MS + i * 10_000, " w")
    call.server_timings = {"prompt_n": 10, "cache_n": 50, "prompt_ms": 50.0, "predicted_n": tokens, "predicted_ms": 5.0}
    rec.frame_llms = [call]
    return rec


def emit_us(builder: SpanBuilder, _unused, turns: int, tokens: int) -> float:
    records = [turn(i + 1, tokens) for i in range(turns)]
    start = time.perf_counter_ns()
    for rec in records:
        rec.span = builder.start_turn_span(rec, None)
        builder.emit_turn(rec)
    return (time.perf_counter_ns() - start) / turns / 1000


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args(argv)
    # Span building on the pipeline's side: the real SDK, no processor, so the exporter thread's
    # work (measured separately below) does not get counted twice.
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    builder = SpanBuilder(TracerProvider().get_tracer("bench"), RunClock().to_wall_ns, ContentPolicy())
    emit_us(builder, None, 20, args.tokens)  # warm the SDK paths
    bare = min(emit_us(builder, None, args.turns, 0) for _ in range(3))
    loaded = min(emit_us(builder, None, args.turns, args.tokens) for _ in range(3))
    spans_per_turn = 9  # turn, user.speech, endpointing, asr, llm, prefill, decode, tts, bot.speech
    chunk_us = min(per_chunk_us(20_000) for _ in range(3))
    # Export, on the exporter's thread: encode one llm span with N token events, minus one with none,
    # to OTLP JSON and write it as a line (what OtlpJsonLinesExporter does).
    with tempfile.TemporaryDirectory() as tmp:
        mem = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(mem))
        b2 = SpanBuilder(provider.get_tracer("bench"), RunClock().to_wall_ns, ContentPolicy())
        for tokens in (0, args.tokens):
            rec = turn(1, tokens)
            rec.span = b2.start_turn_span(rec, None)
            b2.emit_turn(rec)
        llm_small, llm_big = [s for s in mem.get_finished_spans() if s.name == "llm"]
        from voicetrace.otel.jsonl import OtlpJsonLinesExporter

        sink = OtlpJsonLinesExporter(Path(tmp) / "t.jsonl")

        def export_ns(span) -> float:
            start = time.perf_counter_ns()
            for _ in range(50):
                sink.export([span])
            return (time.perf_counter_ns() - start) / 50

        small, big = min(export_ns(llm_small) for _ in range(3)), min(export_ns(llm_big) for _ in range(3))
        sink.shutdown()
    token_event_us = (loaded - bare) / args.tokens
    export_us = (big - small) / args.tokens / 1000
    print("(b) capture cost, goal: <= 5 us per token event")
    print(f"  per streamed chunk (pipeline path)        {chunk_us:6.2f} us")
    print(f"  per token event (span build, real SDK)    {token_event_us:6.2f} us")
    print(f"  per span (turn of {spans_per_turn} spans, no tokens)     {bare / spans_per_turn:6.2f} us")
    print(f"  per token event, exporter thread (OTLP JSON encode + write, off the pipeline) {export_us:6.2f} us")
    return {"chunk_us": chunk_us, "token_event_us": token_event_us, "span_us": bare / spans_per_turn, "export_us": export_us}


if __name__ == "__main__":
    main()
