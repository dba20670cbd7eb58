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

from voicetrace.traces.salvage import salvage_request

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

    def skipped_note(self, limit: int = 10) -> str:
        """One line: how many lines/spans were skipped and where (file:line, reason)."""
        return skipped_note(self.skipped_lines, limit)


def skipped_note(skipped_lines: list[tuple[str, int, str]], limit: int = 10) -> str:
    if not skipped_lines:
        return ""
    where = "; ".join(f"{Path(path).name}:{line} ({reason})" for path, line, reason in skipped_lines[:limit])
    more = f"; and {len(skipped_lines) - limit} more" if len(skipped_lines) > limit else ""
    return f"skipped {len(skipped_lines)} unreadable line(s)/span(s): {where}{more}"


_INT64_MAX = 2**63 - 1


def _rows_are_sound(spans: list, events: list, first_span: int, first_event: int) -> bool:
    """The fast reader's rows from one line: times within int64, names and services strings."""
    for i in range(first_span, len(spans)):
        row = spans[i]
        if not (0 <= row[4] <= _INT64_MAX and 0 <= row[5] <= _INT64_MAX
                and isinstance(row[3], str) and isinstance(row[8], str)):
            return False
    return all(0 <= events[i][3] <= _INT64_MAX and isinstance(events[i][2], str) for i in range(first_event, len(events)))


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
                except orjson.JSONDecodeError:
                    # The last line of a file being written (or cut off) has no newline yet.
                    skipped.append((str(path), number, "invalid JSON" if line.endswith(b"\n") else "truncated last line"))
                    continue
                first_span, first_event = len(spans), len(events)
                try:
                    if not isinstance(request, dict):
                        raise ValueError("not a JSON object")
                    _rows_from_request(request, str(path), spans, events)
                    if not _rows_are_sound(spans, events, first_span, first_event):
                        raise ValueError("odd values")
                except Exception:  # anything odd in the line: read it again span by span (salvage.py)
                    del spans[first_span:], events[first_event:]
                    good_spans, good_events, reasons = salvage_request(request, str(path))
                    spans.extend(good_spans)
                    events.extend(good_events)
                    skipped.extend((str(path), number, reason) for reason in reasons)
    span_df = pd.DataFrame.from_records(spans, columns=SPAN_COLUMNS)
    event_df = pd.DataFrame.from_records(events, columns=EVENT_COLUMNS)
    for df, cols in ((span_df, ("start_ns", "end_ns")), (event_df, ("time_ns",))):
        for col in cols:
            df[col] = df[col].astype("int64")
    return SpanTables(span_df, event_df, skipped)
