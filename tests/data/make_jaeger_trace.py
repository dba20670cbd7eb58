"""Regenerate tests/data/jaeger_trace.json (and jaeger_trace.v3.json) from a REAL Jaeger.

The spans of tests/data/jaeger_source.jsonl are sent through OpenTelemetry's OTLP/HTTP exporter to a
Jaeger started on free loopback ports (tests/integration/jaeger_server.py, the binary that
scripts/build-jaeger.sh builds), then fetched back exactly as Jaeger's query API returns them:
``/api/traces/<id>`` (the legacy JSON the UI downloads) and ``/api/v3/traces/<id>`` (OTLP JSON under
"result"). The bytes are written unchanged: the fixtures are what a user gets from Jaeger.

    .venv/bin/python -m tests.data.make_jaeger_trace
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx
import orjson
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from tests.conftest import wait_for
from tests.integration.jaeger_server import Jaeger

HERE = Path(__file__).parent
SOURCE = HERE / "jaeger_source.jsonl"


def _value(any_value: dict):
    (kind, value), = any_value.items()
    if kind == "intValue":
        return int(value)
    if kind == "arrayValue":
        return [_value(v) for v in value.get("values", [])]
    return value


def _attributes(kvs: list[dict]) -> dict:
    return {kv["key"]: _value(kv["value"]) for kv in kvs}


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def source_spans(path: Path = SOURCE) -> list[ReadableSpan]:
    """The OTLP JSON spans as SDK spans, ready for any exporter (ids, times, kinds, events kept)."""
    out = []
    for line in path.read_bytes().splitlines():
        for resource_spans in orjson.loads(line)["resourceSpans"]:
            resource = Resource(_attributes(resource_spans["resource"]["attributes"]))
            for scope_spans in resource_spans["scopeSpans"]:
                scope = InstrumentationScope(scope_spans["scope"]["name"])
                for s in scope_spans["spans"]:
                    status = s.get("status") or {}
                    out.append(ReadableSpan(
                        name=s["name"], context=_context(s["traceId"], s["spanId"]),
                        parent=_context(s["traceId"], s["parentSpanId"]) if s.get("parentSpanId") else None,
                        resource=resource, attributes=_attributes(s.get("attributes", [])),
                        events=[Event(e["name"], _attributes(e.get("attributes", [])), int(e["timeUnixNano"]))
                                for e in s.get("events", [])],
                        kind=SpanKind(int(s.get("kind", 1)) - 1),  # OTLP counts from 1 (INTERNAL), the SDK from 0
                        status=Status(StatusCode(int(status.get("code", 0)))),
                        start_time=int(s["startTimeUnixNano"]), end_time=int(s["endTimeUnixNano"]),
                        instrumentation_scope=scope,
                    ))
    return out


def main() -> int:
    spans = source_spans()
    trace_ids = sorted({f"{s.context.trace_id:032x}" for s in spans})
    assert len(trace_ids) == 1, trace_ids  # the fixture is one trace
    trace_id = trace_ids[0]
    with tempfile.TemporaryDirectory() as tmp:
        jaeger = Jaeger(Path(tmp) / "jaeger.log").start()
        try:
            exporter = OTLPSpanExporter(endpoint=f"{jaeger.otlp_http}/v1/traces", timeout=10)
            assert exporter.export(spans) == SpanExportResult.SUCCESS, jaeger.log_tail()
            exporter.shutdown()

            def stored(url: str, count) -> bytes | None:
                response = httpx.get(url, timeout=5)
                return response.content if response.status_code == 200 and count(response.json()) == len(spans) else None

            legacy = wait_for(lambda: stored(f"{jaeger.query_url}/api/traces/{trace_id}",
                                             lambda doc: sum(len(t["spans"]) for t in doc.get("data") or [])),
                              30, "the trace in Jaeger's legacy API")
            v3 = wait_for(lambda: stored(f"{jaeger.query_url}/api/v3/traces/{trace_id}",
                                         lambda doc: sum(len(ss.get("spans", [])) for rs in doc["result"]["resourceSpans"]
                                                         for ss in rs.get("scopeSpans", []))),
                          30, "the trace in Jaeger's api/v3")
        finally:
            jaeger.stop()
    (HERE / "jaeger_trace.json").write_bytes(legacy)
    (HERE / "jaeger_trace.v3.json").write_bytes(v3)
    print(f"wrote {HERE / 'jaeger_trace.json'} and jaeger_trace.v3.json: {len(spans)} spans of trace {trace_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
