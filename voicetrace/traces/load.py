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
        if isinstance(orjson.loads(first), dict):
            return None  # one request per line: the lines reader handles it
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
        tables = _from_document(document, str(path)) if document is not None else None
        if tables is None:
            lines.append(path)
        else:
            parts.append(tables)
    if lines or not parts:
        parts.insert(0, read_trace_files(lines))
    return map_pipecat(concat(parts))
