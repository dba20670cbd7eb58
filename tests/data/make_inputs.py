"""Regenerate the small example traces in tests/data from synth (pipecat_trace.jsonl comes from
pipelines/make_pipecat_trace.py: pipecat's own tracing of a real call).

    .venv/bin/python -m tests.data.make_inputs
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.report.synth import Turn, call_spans, write_trace

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


if __name__ == "__main__":
    synth = call_spans([Turn(at=1000, transcript="jaeger one", language="en"),
                        Turn(at=9000, tool=40, prefill=30, transcript="jaeger two", language="en")], call="jaeger.wav")
    write_trace(HERE / "jaeger_source.jsonl", [synth])
    (HERE / "jaeger_trace.json").write_bytes(orjson.dumps(to_jaeger(synth), option=orjson.OPT_INDENT_2))
