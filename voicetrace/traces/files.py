"""Trace files a user names → one SpanTables (raw: normalisers run in the report pipeline).

Reads run folders (their trace file, through RunFolder), OTLP JSON lines (our runs, the OpenTelemetry
Collector's file exporter), one pretty-printed OTLP JSON request, and Jaeger's trace JSON (the UI's
download / ``/api/traces``, or api/v3 ``{"result": ...}``). One bad line never loses the rest of the
file: every line or span that can't be read is skipped and named by file:line and reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import orjson

from voicetrace.errors import InputError
from voicetrace.run.folder import RunFolder
from voicetrace.traces import jaeger_json
from voicetrace.traces.otlp_json import decode_request
from voicetrace.traces.tables import Rows, SpanTables


class TraceInputError(InputError):
    """A trace input that can't be read at all (missing, unreadable); one line for the user."""


def resolve(inputs: Iterable[Path]) -> list[Path]:
    """Run folders → their trace file; every path must exist."""
    paths = []
    for path in inputs:
        path = Path(path)
        if path.is_dir():
            path = RunFolder(path).trace
        if not path.exists():
            raise TraceInputError(f"{path}: no such file")
        paths.append(path)
    return paths


def _whole_document(path: Path) -> dict | None:
    """The file as one JSON object when it is not OTLP JSON lines (Jaeger JSON, one pretty request)."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline()
    except OSError as exc:
        raise TraceInputError(f"{path}: {exc.strerror}") from None
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


def read_document(document: dict, source: str, rows: Rows, line: int = 1) -> bool:
    """Rows of one JSON document (OTLP request, Jaeger api/v3 or UI JSON); False if it is none of them."""
    if isinstance(document.get("result"), dict):  # Jaeger api/v3: OTLP JSON under "result"
        document = document["result"]
    if "resourceSpans" in document:
        rows.skip(source, line, decode_request(document, source, rows.spans, rows.events))
    elif isinstance(document.get("data"), list):  # Jaeger UI download / legacy /api/traces
        rows.skip(source, line, jaeger_json.decode_document(document, source, rows.spans, rows.events))
    else:
        return False
    return True


def read_lines(path: Path, rows: Rows) -> None:
    """OTLP JSON lines: one export request per line."""
    source = str(path)
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
                rows.skip(source, number, ["invalid JSON" if line.endswith(b"\n") else "truncated last line"])
                continue
            # A line may be a whole Jaeger answer too (curl of /api/traces/ID or /api/v3/traces/ID).
            if not (type(request) is dict and read_document(request, source, rows, number)):
                rows.skip(source, number, decode_request(request, source, rows.spans, rows.events))


def read_trace_files(inputs: Iterable[Path]) -> SpanTables:
    """Every input (see module doc), in order; raises TraceInputError with one line for the user."""
    rows = Rows()
    for path in resolve(inputs):
        document = _whole_document(path)
        if document is None or not read_document(document, str(path), rows):
            read_lines(path, rows)
    return rows.tables()
