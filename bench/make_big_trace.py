"""Generate a big trace.jsonl of synthetic calls in our span model (OTLP JSON lines, one call per
line): every stage span, llama.cpp server spans, a tool span, one event per token.

    .venv/bin/python bench/make_big_trace.py OUT.jsonl [--calls 1000] [--turns 10] [--tokens 60]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import orjson

from voicetrace import semconv as sc

MS = 1_000_000
T0 = 1_790_000_000_000_000_000


def _kv(attrs: dict) -> list:
    out = []
    for k, v in attrs.items():
        if isinstance(v, bool):
            out.append({"key": k, "value": {"boolValue": v}})
        elif isinstance(v, int):
            out.append({"key": k, "value": {"intValue": str(v)}})
        elif isinstance(v, float):
            out.append({"key": k, "value": {"doubleValue": v}})
        else:
            out.append({"key": k, "value": {"stringValue": str(v)}})
    return out


class CallWriter:
    def __init__(self, rng: random.Random, tokens: int) -> None:
        self.rng, self.tokens, self.next_id = rng, tokens, 0

    def _id(self) -> str:
        self.next_id += 1
        return f"{self.next_id:016x}"

    def span(self, trace, parent, name, start_ms, end_ms, attrs=None, events=()):
        return {
            "traceId": trace, "spanId": self._id(), "parentSpanId": parent, "name": name, "kind": 1,
            "startTimeUnixNano": str(T0 + int(start_ms * MS)), "endTimeUnixNano": str(T0 + int(end_ms * MS)),
            "attributes": _kv(attrs or {}),
            "events": [{"name": n, "timeUnixNano": str(T0 + int(t * MS)), "attributes": _kv(a)} for n, t, a in events],
        }

    def call(self, index: int, turns: int) -> bytes:
        r = self.rng
        trace = f"{index + 1:032x}"
        spans = []
        conv = self.span(trace, "", sc.SPAN_CONVERSATION, 0, turns * 9000 + 5000, {sc.ATTR_CALL_FILE: f"call{index}.wav"})
        spans.append(conv)
        for n in range(turns):
            at = 3000 + n * 9000
            decided = at + r.uniform(220, 600)
            asr_end = decided + r.uniform(0, 400)
            llm_start = asr_end + r.uniform(0.5, 3)
            first = llm_start + r.uniform(60, 400)
            gaps = [r.uniform(8, 30) for _ in range(self.tokens)]
            times = [first]
            for g in gaps[1:]:
                times.append(times[-1] + g)
            tts_start = first + r.uniform(80, 300)
            audio = tts_start + r.uniform(100, 500)
            bot_start, bot_end = audio + r.uniform(1, 15), audio + 3000
            turn = self.span(trace, conv["spanId"], sc.SPAN_TURN, at - 2000, bot_end, {sc.ATTR_TURN_NUMBER: n + 1})
            t = turn["spanId"]
            llm = self.span(trace, t, sc.SPAN_LLM, llm_start, times[-1], {sc.ATTR_GENAI_OUTPUT_TOKENS: self.tokens, sc.ATTR_GENAI_INPUT_TOKENS: 80 + 40 * n},
                            [(sc.EVENT_FIRST_TOKEN, first, {})] + [(sc.EVENT_TOKEN, x, {sc.ATTR_TOKEN_COUNT: 1}) for x in times])
            spans += [
                turn,
                self.span(trace, t, sc.SPAN_USER_SPEECH, at - 2000, at),
                self.span(trace, t, sc.SPAN_ENDPOINTING, at, decided, {sc.ATTR_TURN_PROBABILITY: 0.9}),
                self.span(trace, t, sc.SPAN_ASR, at - 2000, asr_end, {sc.ATTR_ASR_TRANSCRIPT_CHARS: 40}),
                llm,
                self.span(trace, llm["spanId"], sc.SPAN_LLM_PREFILL, first - 50, first, {sc.ATTR_SERVER_PROMPT_N: 20, sc.ATTR_SERVER_CACHE_N: 60 + 40 * n}),
                self.span(trace, llm["spanId"], sc.SPAN_LLM_DECODE, first, times[-1], {sc.ATTR_SERVER_PREDICTED_N: self.tokens}),
                self.span(trace, t, "tool.get_claim_status", asr_end, asr_end + 1.5, {sc.ATTR_TOOL_NAME: "get_claim_status"}),
                self.span(trace, t, sc.SPAN_TTS, tts_start, bot_end - 500, {}, [(sc.EVENT_TTS_FIRST_AUDIO, audio, {})]),
                self.span(trace, t, sc.SPAN_BOT_SPEECH, bot_start, bot_end),
            ]
        request = {"resourceSpans": [{"resource": {"attributes": _kv({"service.name": "voicetrace"})},
                                      "scopeSpans": [{"scope": {"name": "voicetrace"}, "spans": spans}]}]}
        return orjson.dumps(request) + b"\n"


def make_trace(path: Path, calls: int = 1000, turns: int = 10, tokens: int = 60, seed: int = 3) -> dict:
    writer = CallWriter(random.Random(seed), tokens)
    with open(path, "wb") as out:
        for i in range(calls):
            out.write(writer.call(i, turns))
    spans_per_turn, events_per_turn = 10, tokens + 2
    return {"calls": calls, "turns": calls * turns, "spans": calls * (1 + turns * spans_per_turn),
            "events": calls * turns * events_per_turn, "bytes": path.stat().st_size}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=60)
    args = parser.parse_args(argv)
    info = make_trace(args.out, args.calls, args.turns, args.tokens)
    print(f"{args.out}: {info['turns']:,} turns, {info['spans']:,} spans + {info['events']:,} token events, {info['bytes'] / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
