"""Regenerate the small example traces in tests/data (Jaeger JSON, pipecat-style OTLP) from synth.

    .venv/bin/python -m tests.data.make_inputs
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.report.synth import T0, Turn, _attrs, call_spans, write_trace

HERE = Path(__file__).parent


def _tag(key, value):
    kind = "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "float64" if isinstance(value, float) else "string"
    return {"key": key, "type": kind, "value": value}


def _plain(attrs: list) -> dict:
    out = {}
    for kv in attrs:
        (kind, v), = kv["value"].items()
        out[kv["key"]] = int(v) if kind == "intValue" else v
    return out


def to_jaeger(spans: list[dict]) -> dict:
    """Our OTLP JSON spans → Jaeger's UI trace JSON (µs times, typed tags, logs)."""
    out = []
    for s in spans:
        start_us = int(s["startTimeUnixNano"]) // 1000
        out.append({
            "traceID": s["traceId"], "spanID": s["spanId"], "operationName": s["name"],
            "references": [{"refType": "CHILD_OF", "traceID": s["traceId"], "spanID": s["parentSpanId"]}] if s["parentSpanId"] else [],
            "startTime": start_us, "duration": int(s["endTimeUnixNano"]) // 1000 - start_us,
            "tags": [_tag(k, v) for k, v in _plain(s["attributes"]).items()] + [_tag("span.kind", "internal")],
            "logs": [{"timestamp": int(e["timeUnixNano"]) // 1000,
                      "fields": [_tag("event", e["name"])] + [_tag(k, v) for k, v in _plain(e["attributes"]).items()]}
                     for e in s.get("events", [])],
            "processID": "p1", "warnings": None,
        })
    return {"data": [{"traceID": spans[0]["traceId"], "spans": out,
                      "processes": {"p1": {"serviceName": "voicetrace", "tags": []}}, "warnings": None}],
            "total": 0, "limit": 0, "offset": 0, "errors": None}


def pipecat_spans() -> list[dict]:
    """What pipecat's tracing writes for two turns: conversation → turn → stt / llm / tts (ms times)."""
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    ids = iter(f"{i:016x}" for i in range(0x100, 0x200))

    def span(parent, name, start_ms, end_ms, attrs):
        return {"traceId": trace, "spanId": next(ids), "parentSpanId": parent, "name": name, "kind": 1,
                "startTimeUnixNano": str(T0 + start_ms * 1_000_000), "endTimeUnixNano": str(T0 + end_ms * 1_000_000),
                "attributes": _attrs(attrs), "events": []}

    conv = span("", "conversation", 0, 20000, {"conversation.id": "pc-1", "conversation.type": "voice"})
    spans = [conv]
    for n, at in ((1, 1000), (2, 9000)):
        turn = span(conv["spanId"], "turn", at, at + 5000, {"turn.number": n, "turn.type": "conversation",
                                                            "turn.was_interrupted": False,
                                                            "turn.user_bot_latency_seconds": 1.25})
        spans += [turn,
                  span(turn["spanId"], "stt", at + 1500, at + 1900, {"gen_ai.operation.name": "stt", "transcript": f"hello {n}",
                                                                     "is_final": True, "language": "en", "metrics.ttfb": 0.4}),
                  span(turn["spanId"], "llm", at + 1950, at + 2600, {"gen_ai.operation.name": "chat", "output": "hi there",
                                                                     "metrics.ttfb": 0.25, "gen_ai.usage.input_tokens": 80 + n}),
                  span(turn["spanId"], "tts", at + 2300, at + 2900, {"gen_ai.operation.name": "tts", "text": "hi there",
                                                                     "metrics.ttfb": 0.15})]
    return spans


if __name__ == "__main__":
    synth = call_spans([Turn(at=1000, transcript="jaeger one", language="en"),
                        Turn(at=9000, tool=40, prefill=30, transcript="jaeger two", language="en")], call="jaeger.wav")
    write_trace(HERE / "jaeger_source.jsonl", [synth])
    (HERE / "jaeger_trace.json").write_bytes(orjson.dumps(to_jaeger(synth), option=orjson.OPT_INDENT_2))
    write_trace(HERE / "pipecat_trace.jsonl", [pipecat_spans()])
