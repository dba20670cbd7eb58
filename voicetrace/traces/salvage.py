"""Careful reading of OTLP JSON that the fast reader could not take: span by span, value by value.

``otlp_json.read_trace_files`` reads a well-formed line in one go; when that raises (a foreign
exporter's odd value, a hand-edited or hostile file), the line comes here. Every span that can
be read is kept, every value of the wrong type becomes None, every span that can't be read is
named (``span 3: bad startTimeUnixNano``) so the report can say what it skipped. Nothing here
raises: the report is run on the day things go wrong.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

MAX_DEPTH = 32
"""Nested arrays/kvlists deeper than this become None: a hostile file can't exhaust the stack."""
INT64_MAX = 2**63 - 1
_HEX = frozenset("0123456789abcdefABCDEF")


def as_int(value: Any) -> int | None:
    """An OTLP int64 (JSON number or decimal string) within int64, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        value = int(value) if value.is_integer() else None
    elif isinstance(value, str):
        text = value.strip()
        value = int(text) if 0 < len(text) < 21 and text.lstrip("-").isdigit() else None
    if not isinstance(value, int) or not -(2**63) <= value <= INT64_MAX:
        return None
    return value


def as_time_ns(value: Any, what: str) -> int:
    number = as_int(value if value is not None else 0)
    if number is None or number < 0:
        raise ValueError(f"bad {what}")
    return number


def hex_id(value: Any) -> str:
    if not value or not isinstance(value, str):
        return ""
    if len(value) in (16, 32) and set(value) <= _HEX:
        return value.lower()
    try:
        return base64.b64decode(value, validate=True).hex()
    except (binascii.Error, ValueError):
        return value[:64]


def any_value(value: Any, depth: int = 0) -> Any:
    if not isinstance(value, dict) or not value or depth > MAX_DEPTH:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "stringValue":
        return inner if isinstance(inner, str) else None
    if kind == "boolValue":
        return inner if isinstance(inner, bool) else None
    if kind == "intValue":
        return as_int(inner)
    if kind == "doubleValue":
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return float(inner)
        try:
            return float(inner) if isinstance(inner, str) and len(inner) < 40 else None
        except ValueError:
            return None
    if kind in ("arrayValue", "kvlistValue"):
        values = inner.get("values") if isinstance(inner, dict) else None
        if not isinstance(values, list):
            return None
        if kind == "arrayValue":
            return [any_value(v, depth + 1) for v in values]
        return attributes_dict(values, depth + 1)
    if kind == "bytesValue":
        return inner if isinstance(inner, str) else None
    return None  # a kind this reader does not know


def attributes_dict(attributes: Any, depth: int = 0) -> dict:
    if not isinstance(attributes, list):
        return {}
    return {kv["key"]: any_value(kv.get("value"), depth) for kv in attributes
            if isinstance(kv, dict) and isinstance(kv.get("key"), str)}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(container: Any, key: str) -> list:
    value = container.get(key) if isinstance(container, dict) else None
    return value if isinstance(value, list) else []


def span_rows(span: Any, service: str, source: str) -> tuple[tuple, list[tuple]]:
    """One span (SPAN_COLUMNS order) and its events (EVENT_COLUMNS order); ValueError if unreadable."""
    if not isinstance(span, dict):
        raise ValueError("not a JSON object")
    trace_id, span_id = hex_id(span.get("traceId")), hex_id(span.get("spanId"))
    if not trace_id or not span_id:
        raise ValueError("no traceId/spanId")
    start_ns = as_time_ns(span.get("startTimeUnixNano"), "startTimeUnixNano")
    end_ns = as_time_ns(span.get("endTimeUnixNano"), "endTimeUnixNano")
    status = span.get("status")
    code = as_int(status.get("code", 0)) if isinstance(status, dict) else 0
    row = (trace_id, span_id, hex_id(span.get("parentSpanId")), _text(span.get("name")), start_ns, end_ns,
           attributes_dict(span.get("attributes")), code if code in (0, 1, 2) else 0, service, source)
    events = []
    for event in _list(span, "events"):
        if not isinstance(event, dict):
            continue
        try:
            time_ns = as_time_ns(event.get("timeUnixNano"), "timeUnixNano")
        except ValueError:
            continue  # an event without a readable time; the span is still worth keeping
        events.append((trace_id, span_id, _text(event.get("name")), time_ns, attributes_dict(event.get("attributes"))))
    return row, events


def salvage_request(request: Any, source: str) -> tuple[list[tuple], list[tuple], list[str]]:
    """(span rows, event rows, reasons for spans that could not be read) of one export request."""
    spans: list[tuple] = []
    events: list[tuple] = []
    bad: list[str] = []
    if not isinstance(request, dict) or not isinstance(request.get("resourceSpans", []), list):
        return spans, events, ["not an OTLP export request"]
    index = 0
    for resource_spans in _list(request, "resourceSpans"):
        resource = resource_spans.get("resource") if isinstance(resource_spans, dict) else None
        service = attributes_dict(resource.get("attributes") if isinstance(resource, dict) else None).get("service.name")
        service = service if isinstance(service, str) else ""
        scopes = _list(resource_spans, "scopeSpans") + _list(resource_spans, "instrumentationLibrarySpans")
        for scope_spans in scopes:
            for span in _list(scope_spans, "spans"):
                index += 1
                try:
                    row, span_events = span_rows(span, service, source)
                except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
                    bad.append(f"span {index}: {exc}"[:100])
                    continue
                spans.append(row)
                events.extend(span_events)
    return spans, events, bad
