"""Jaeger's legacy ``/api/traces`` JSON for arbitrary spans, for unit tests of the legacy read path
(e.g. pipecat spans read back through `report --jaeger` without a server).

Fixtures are never made with this: tests/data/jaeger_trace.json is a real Jaeger's own answer
(tests/data/make_jaeger_trace.py), and test_the_legacy_shape_is_jaegers checks this writer against it.
"""

from __future__ import annotations

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
            "references": [{"refType": "CHILD_OF", "traceID": s["traceId"], "spanID": s["parentSpanId"]}] if s.get("parentSpanId") else [],
            "startTime": start_us, "duration": int(s["endTimeUnixNano"]) // 1000 - start_us,
            "tags": [_tag(k, v) for k, v in _plain(s.get("attributes", [])).items()] + [_tag("span.kind", "internal")],
            "logs": [{"timestamp": int(e["timeUnixNano"]) // 1000,
                      "fields": [_tag("event", e["name"])] + [_tag(k, v) for k, v in _plain(e.get("attributes", [])).items()]}
                     for e in s.get("events", [])],
            "processID": "p1", "warnings": None,
        })
    return {"data": [{"traceID": spans[0]["traceId"], "spans": out,
                      "processes": {"p1": {"serviceName": "voicetrace", "tags": []}}, "warnings": None}],
            "total": 0, "limit": 0, "offset": 0, "errors": None}


