"""Trace inputs a user names on the command line → one SpanTables.

Accepts run folders (their ``trace.jsonl``), OTLP JSON lines (our runs, the OpenTelemetry
Collector's file exporter), one pretty-printed OTLP JSON request, Jaeger's trace JSON (the UI's
download / ``/api/traces``, or api/v3 ``{"result": ...}``); pipecat's own spans are mapped onto ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import orjson
import pandas as pd

from voicetrace.traces.otlp_json import (EVENT_COLUMNS, SPAN_COLUMNS, SpanTables, TraceInputError,
                                         _rows_from_request, read_trace_files)
from voicetrace.traces.pipecat import map_pipecat
from voicetrace.traces.salvage import salvage_request


def resolve(inputs: Iterable[Path]) -> list[Path]:
    """Run folders → their trace.jsonl; every path must exist."""
    paths = []
    for path in inputs:
        path = Path(path)
        if path.is_dir():
            path = path / "trace.jsonl"
        if not path.exists():
            raise TraceInputError(f"{path}: no such file")
        paths.append(path)
    return paths


def _whole_document(path: Path) -> dict | None:
    """The file as one JSON object when it is not OTLP JSON lines (Jaeger JSON, one pretty request)."""
    with open(path, "rb") as handle:
        first = handle.readline()
    try:
        head = orjson.loads(first)
        # One request per line: the lines reader handles it. Jaeger's API answers in one line too.
        if isinstance(head, dict) and not (isinstance(head.get("data"), list) or isinstance(head.get("result"), dict)):
            return None
    except orjson.JSONDecodeError:
        pass
    try:
        document = orjson.loads(path.read_bytes())
    except (orjson.JSONDecodeError, OSError):
        return None
    return document if isinstance(document, dict) else None


def _from_document(document: dict, source: str) -> SpanTables | None:
    spans: list = []
    events: list = []
    if isinstance(document.get("result"), dict):  # Jaeger api/v3: OTLP JSON under "result"
        document = document["result"]
    if "resourceSpans" in document:
        _rows_from_request(document, source, spans, events)
    elif isinstance(document.get("data"), list):  # Jaeger UI download / legacy /api/traces
        from voicetrace.traces.jaeger import _legacy_rows

        for trace in document["data"]:
            if isinstance(trace, dict):
                _legacy_rows(trace, source, spans, events)
    else:
        return None
    span_df = pd.DataFrame.from_records(spans, columns=SPAN_COLUMNS).astype({"start_ns": "int64", "end_ns": "int64"})
    event_df = pd.DataFrame.from_records(events, columns=EVENT_COLUMNS).astype({"time_ns": "int64"})
    return SpanTables(span_df, event_df, [])


def _from_document_safely(document: dict, source: str) -> SpanTables | None:
    """``_from_document``, but a document with odd values is read span by span (Jaeger JSON trace by
    trace) and what can't be read is skipped with a reason instead of failing the report."""
    try:
        tables = _from_document(document, source)
        if tables is None or _sound(tables):
            return tables
    except Exception:
        pass
    spans: list = []
    events: list = []
    skipped: list = []
    if isinstance(document.get("result"), dict):
        document = document["result"]
    if "resourceSpans" in document:
        spans, events, reasons = salvage_request(document, source)
        skipped = [(source, 1, reason) for reason in reasons]
    else:
        from voicetrace.traces.jaeger import _legacy_rows

        for number, trace in enumerate(document.get("data") or [], start=1):
            trace_spans: list = []
            trace_events: list = []
            try:
                _legacy_rows(trace, source, trace_spans, trace_events)
                candidate = SpanTables(pd.DataFrame.from_records(trace_spans, columns=SPAN_COLUMNS),
                                       pd.DataFrame.from_records(trace_events, columns=EVENT_COLUMNS))
                if not _sound(candidate):
                    raise ValueError("odd values")
            except Exception as exc:
                skipped.append((source, 1, f"trace {number}: {type(exc).__name__}"))
                continue
            spans += trace_spans
            events += trace_events
    span_df = pd.DataFrame.from_records(spans, columns=SPAN_COLUMNS).astype({"start_ns": "int64", "end_ns": "int64"})
    event_df = pd.DataFrame.from_records(events, columns=EVENT_COLUMNS).astype({"time_ns": "int64"})
    return SpanTables(span_df, event_df, skipped)


def _sound(tables: SpanTables) -> bool:
    """Times are int64 nanoseconds ≥ 0; names and services are strings."""
    for df, cols in ((tables.spans, ("start_ns", "end_ns")), (tables.events, ("time_ns",))):
        for col in cols:
            if df[col].dtype != "int64" or (len(df) and df[col].min() < 0):
                return False
    return all(isinstance(v, str) for v in tables.spans["name"]) and all(isinstance(v, str) for v in tables.spans["service"])


def concat(parts: list[SpanTables]) -> SpanTables:
    if len(parts) == 1:
        return parts[0]
    spans = pd.concat([p.spans for p in parts], ignore_index=True)
    events = pd.concat([p.events for p in parts], ignore_index=True)
    return SpanTables(spans, events, [s for p in parts for s in p.skipped_lines])


def load(inputs: Iterable[Path]) -> SpanTables:
    """Read every input (see module doc); raises TraceInputError with one line for the user."""
    paths = resolve(inputs)
    parts = []
    lines = []
    for path in paths:
        document = _whole_document(path)
        tables = _from_document_safely(document, str(path)) if document is not None else None
        if tables is None:
            lines.append(path)
        else:
            parts.append(tables)
    if lines or not parts:
        parts.insert(0, read_trace_files(lines))
    return map_pipecat(concat(parts))
