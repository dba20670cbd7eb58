"""Jaeger's UI trace JSON (the UI's download, the query service's ``/api/traces``) → span and event rows.

Microsecond times, typed tags, logs and a process table, converted to the same rows as OTLP JSON.
Like the OTLP decoder, each span is read on its own: a span that can't be read is left out and named
(``trace 1 span 3: bad startTime``), a tag of the wrong type becomes None, nothing raises.
"""

from __future__ import annotations

from typing import Any

from voicetrace.traces.otlp_json import as_int, as_list, as_text, as_time_ns

_STATUS = {"OK": 1, "ERROR": 2}
_DROPPED_TAGS = ("span.kind", "otel.scope.name", "otel.scope.version", "otel.status_description",
                 "internal.span.format", "error")
"""Tags Jaeger makes out of OTLP fields that are not attributes."""
NOT_A_TRACE = "not a Jaeger trace"


def tag_value(tag: dict) -> Any:
    value, kind = tag.get("value"), tag.get("type", "string")
    if kind == "int64":
        return as_int(value)
    if kind == "float64":
        if type(value) in (int, float):
            return float(value)
        try:
            return float(value) if type(value) is str and len(value) < 40 else None
        except ValueError:
            return None
    if kind == "bool":
        return value if type(value) is bool else str(value).lower() == "true"
    return value if type(value) is str else None


def _tags(items: Any) -> dict:
    return {t["key"]: tag_value(t) for t in items if type(t) is dict and type(t.get("key")) is str} \
        if type(items) is list else {}


def _jaeger_id(value: Any, width: int) -> str:
    return value.lower().rjust(width, "0") if type(value) is str and value else ""


def _span(span: Any, processes: dict, source: str, spans: list, events: list) -> None:
    if type(span) is not dict:
        raise ValueError("not a JSON object")
    trace_id, span_id = _jaeger_id(span.get("traceID"), 32), _jaeger_id(span.get("spanID"), 16)
    if not trace_id or not span_id:
        raise ValueError("no traceID/spanID")
    parent = next((r.get("spanID") for r in as_list(span, "references")
                   if type(r) is dict and r.get("refType") == "CHILD_OF"), "")
    tags = _tags(span.get("tags"))
    status = _STATUS.get(str(tags.pop("otel.status_code", "")).upper(), 0)
    for key in _DROPPED_TAGS:
        tags.pop(key, None)
    start_ns = as_time_ns(span.get("startTime"), "startTime") * 1000
    duration_ns = as_time_ns(span.get("duration"), "duration") * 1000
    process = processes.get(span.get("processID")) if type(span.get("processID")) is str else None
    service = as_text(process.get("serviceName")) if type(process) is dict else ""
    row = (trace_id, span_id, _jaeger_id(parent, 16), as_text(span.get("operationName")), start_ns,
           start_ns + duration_ns, tags, status, service, source)
    if row[5] > 2**63 - 1:
        raise ValueError("bad startTime")
    span_events = []
    for log in as_list(span, "logs"):
        if type(log) is not dict:
            continue
        try:
            time_ns = as_time_ns(log.get("timestamp"), "timestamp") * 1000
        except ValueError:
            continue
        if time_ns > 2**63 - 1:
            continue
        fields = _tags(log.get("fields"))
        span_events.append((trace_id, span_id, str(fields.pop("event", "") or ""), time_ns, fields))
    spans.append(row)
    events.extend(span_events)


def decode_trace(trace: Any, source: str, spans: list, events: list, number: int = 1) -> list[str]:
    """Append the rows of one trace of Jaeger's UI JSON; returns a reason for each span left out."""
    if type(trace) is not dict:
        return [f"trace {number}: {NOT_A_TRACE}"]
    processes = trace.get("processes")
    processes = processes if type(processes) is dict else {}
    bad = []
    for index, span in enumerate(as_list(trace, "spans"), start=1):
        try:
            _span(span, processes, source, spans, events)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            bad.append(f"trace {number} span {index}: {exc}"[:100])
    return bad


def decode_document(document: dict, source: str, spans: list, events: list) -> list[str]:
    """Every trace of a ``{"data": [trace, ...]}`` document."""
    bad = []
    for number, trace in enumerate(as_list(document, "data"), start=1):
        bad += decode_trace(trace, source, spans, events, number)
    return bad
