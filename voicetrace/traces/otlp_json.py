"""OTLP JSON lines → a spans DataFrame and an events DataFrame.

Each line is one ExportTraceServiceRequest (our trace.jsonl, the OpenTelemetry Collector's
file exporter). Lines that can't be read are skipped and counted with their line numbers;
one bad line never loses the rest of the file.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import orjson
import pandas as pd

SPAN_COLUMNS = [
    "trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns",
    "attributes", "status_code", "service", "source",
]
EVENT_COLUMNS = ["trace_id", "span_id", "name", "time_ns", "attributes"]


class TraceInputError(Exception):
    """A trace input that can't be read at all; one line for the user."""


@dataclass
class SpanTables:
    spans: pd.DataFrame
    events: pd.DataFrame
    skipped_lines: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return len(self.skipped_lines)


def any_value(value: dict) -> Any:
    """Decode an OTLP AnyValue (hot path: one call per attribute, so the common kinds go first)."""
    if not isinstance(value, dict):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return attributes_dict((value["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes_dict(attributes: Iterable[dict] | None) -> dict:
    if not attributes:
        return {}
    return {kv["key"]: any_value(kv.get("value")) for kv in attributes if "key" in kv}


def _hex_id(value: Any) -> str:
    """OTLP/JSON ids are hex; tolerate base64 (protobuf's JSON mapping) too."""
    if not value:
        return ""
    value = str(value)
    if len(value) in (16, 32):
        try:
            int(value, 16)  # C-speed check; ids are hex in OTLP/JSON
            return value.lower()
        except ValueError:
            pass
    try:
        return base64.b64decode(value).hex()
    except Exception:
        return value


def _rows_from_request(request: dict, source: str, spans: list, events: list) -> None:
    for resource_spans in request.get("resourceSpans", []) or []:
        resource = attributes_dict((resource_spans.get("resource") or {}).get("attributes"))
        service = resource.get("service.name", "")
        for scope_spans in resource_spans.get("scopeSpans", []) or []:
            for span in scope_spans.get("spans", []) or []:
                trace_id = _hex_id(span.get("traceId"))
                span_id = _hex_id(span.get("spanId"))
                spans.append((
                    trace_id,
                    span_id,
                    _hex_id(span.get("parentSpanId")),
                    span.get("name", ""),
                    int(span.get("startTimeUnixNano", 0)),
                    int(span.get("endTimeUnixNano", 0)),
                    attributes_dict(span.get("attributes")),
                    int((span.get("status") or {}).get("code", 0) or 0),
                    service,
                    source,
                ))
                for event in span.get("events", []) or []:
                    events.append((
                        trace_id,
                        span_id,
                        event.get("name", ""),
                        int(event.get("timeUnixNano", 0)),
                        attributes_dict(event.get("attributes")),
                    ))


def read_trace_files(paths: Iterable[Path]) -> SpanTables:
    spans: list = []
    events: list = []
    skipped: list[tuple[str, int, str]] = []
    for path in paths:
        path = Path(path)
        try:
            handle = open(path, "rb")
        except OSError as exc:
            raise TraceInputError(f"{path}: {exc.strerror}") from None
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    request = orjson.loads(line)
                    if not isinstance(request, dict):
                        raise ValueError("not a JSON object")
                    _rows_from_request(request, str(path), spans, events)
                except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError, KeyError) as exc:
                    skipped.append((str(path), number, type(exc).__name__))
    span_df = pd.DataFrame.from_records(spans, columns=SPAN_COLUMNS)
    event_df = pd.DataFrame.from_records(events, columns=EVENT_COLUMNS)
    for df, cols in ((span_df, ("start_ns", "end_ns")), (event_df, ("time_ns",))):
        for col in cols:
            df[col] = df[col].astype("int64")
    return SpanTables(span_df, event_df, skipped)
