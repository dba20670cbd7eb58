"""OTLP JSON (one ExportTraceServiceRequest) → span and event rows; the one OTLP JSON decoder.

Each span is read on its own: a span that can't be read (no ids, a time that is not an int64 ≥ 0,
not an object) is left out and named (``span 3: bad startTimeUnixNano``); a value of the wrong type
becomes None; nested values deeper than ``MAX_DEPTH`` become None. Nothing here raises: the report
is run on the day things go wrong. The common, well-formed kinds are tested first (one call per
attribute on a 10,000-turn trace).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

MAX_DEPTH = 32
"""Nested arrays/kvlists deeper than this become None: a hostile file can't exhaust the stack."""
INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
NOT_A_REQUEST = "not an OTLP export request"


def as_int(value: Any) -> int | None:
    """An OTLP int64 (JSON number or decimal string) within int64, else None."""
    kind = type(value)
    if kind is str:
        if not 0 < len(value) < 21:
            return None
        try:
            value = int(value)
        except ValueError:
            return None
    elif kind is float:
        if not value.is_integer():
            return None
        value = int(value)
    elif kind is not int:
        return None  # bool, None, containers
    return value if _INT64_MIN <= value <= INT64_MAX else None


def as_time_ns(value: Any, what: str) -> int:
    """A time in nanoseconds: an int64 ≥ 0 (missing is 0); ValueError naming ``what`` otherwise."""
    if type(value) is str and 0 < len(value) < 20 and value.isdecimal():  # the common case, fast
        number = int(value)
        if number <= INT64_MAX:
            return number
        raise ValueError(f"bad {what}")
    number = 0 if value is None else as_int(value)
    if number is None or number < 0:
        raise ValueError(f"bad {what}")
    return number


def hex_id(value: Any) -> str:
    """OTLP/JSON ids are hex; protobuf's JSON mapping writes base64; anything else is kept, shortened."""
    if not value or type(value) is not str:
        return ""
    if len(value) in (16, 32):  # (int() also takes "_", "+", "0x": still an id, just not a canonical one)
        try:
            int(value, 16)
            return value.lower()
        except ValueError:
            pass
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value[:64]


def any_value(value: Any, depth: int = 0) -> Any:
    """Decode an OTLP AnyValue; a value of the wrong type (or an unknown kind) is None."""
    if type(value) is not dict:
        return None
    if "stringValue" in value:
        inner = value["stringValue"]
        return inner if type(inner) is str else None
    if "intValue" in value:
        return as_int(value["intValue"])
    if "doubleValue" in value:
        inner = value["doubleValue"]
        if type(inner) in (float, int):
            return float(inner)
        if type(inner) is str and len(inner) < 40:  # "NaN", "Infinity", "1.5" from protobuf's JSON mapping
            try:
                return float(inner)
            except ValueError:
                return None
        return None
    if "boolValue" in value:
        inner = value["boolValue"]
        return inner if type(inner) is bool else None
    if depth >= MAX_DEPTH:
        return None
    if "arrayValue" in value:
        values = as_list(value["arrayValue"], "values")
        return [any_value(v, depth + 1) for v in values]
    if "kvlistValue" in value:
        return attributes_dict(as_list(value["kvlistValue"], "values"), depth + 1)
    if "bytesValue" in value:
        inner = value["bytesValue"]
        return inner if type(inner) is str else None
    return None


def attributes_dict(attributes: Any, depth: int = 0) -> dict:
    if not attributes or type(attributes) is not list:
        return {}
    out = {}
    for kv in attributes:
        if type(kv) is dict:
            key = kv.get("key")
            if type(key) is str:
                out[key] = any_value(kv.get("value"), depth)
    return out


def as_text(value: Any) -> str:
    """A JSON string, or "" for anything else."""
    return value if type(value) is str else ""


def as_list(container: Any, key: str) -> list:
    """``container[key]`` when the container is an object and that is a list, else []."""
    value = container.get(key) if type(container) is dict else None
    return value if type(value) is list else []


def _span(span: Any, service: str, source: str, spans: list, events: list) -> None:
    """Append one span (SPAN_COLUMNS order) and its readable events; ValueError if the span is unreadable.
    The hot path of a big trace: one call per span, the event loop inlined."""
    if type(span) is not dict:
        raise ValueError("not a JSON object")
    trace_id, span_id = hex_id(span.get("traceId")), hex_id(span.get("spanId"))
    if not trace_id or not span_id:
        raise ValueError("no traceId/spanId")
    start_ns = as_time_ns(span.get("startTimeUnixNano"), "startTimeUnixNano")
    end_ns = as_time_ns(span.get("endTimeUnixNano"), "endTimeUnixNano")
    status = span.get("status")
    code = as_int(status.get("code", 0)) if type(status) is dict else 0
    name = span.get("name")
    row = (trace_id, span_id, hex_id(span.get("parentSpanId")), name if type(name) is str else "", start_ns, end_ns,
           attributes_dict(span.get("attributes")), code if code in (0, 1, 2) else 0, service, source)
    span_events = []
    raw_events = span.get("events")
    for event in raw_events if type(raw_events) is list else ():
        if type(event) is not dict:
            continue
        try:
            time_ns = as_time_ns(event.get("timeUnixNano"), "timeUnixNano")
        except ValueError:
            continue  # an event without a readable time; the span is still worth keeping
        name = event.get("name")
        span_events.append((trace_id, span_id, name if type(name) is str else "", time_ns,
                            attributes_dict(event.get("attributes"))))
    spans.append(row)
    events.extend(span_events)


def decode_request(request: Any, source: str, spans: list, events: list) -> list[str]:
    """Append the rows of one export request; returns a reason for each span (or the request) left out."""
    if type(request) is not dict or type(request.get("resourceSpans", [])) is not list:
        return [NOT_A_REQUEST]
    bad: list[str] = []
    index = 0
    for resource_spans in as_list(request, "resourceSpans"):
        resource = resource_spans.get("resource") if type(resource_spans) is dict else None
        service = attributes_dict(resource.get("attributes") if type(resource) is dict else None).get("service.name")
        service = as_text(service)
        # instrumentationLibrarySpans: the name before OTLP 0.15, still written by old exporters
        for scope_spans in as_list(resource_spans, "scopeSpans") + as_list(resource_spans, "instrumentationLibrarySpans"):
            for span in as_list(scope_spans, "spans"):
                index += 1
                try:
                    _span(span, service, source, spans, events)
                except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                    bad.append(f"span {index}: {exc}"[:100])
    return bad
