"""The OTLP JSON-lines file: OpenTelemetry's OTLP JSON encoding, one ExportTraceServiceRequest
per line, flushed (and fsynced) per batch so a crash loses at most the last batch.

``spans_to_otlp_json`` is the one encoder; every trace file voicetrace writes goes through
``OtlpJsonLinesExporter``.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger(__name__)

# OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping writes base64.
_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _ids_to_hex(node: Any) -> None:
    if isinstance(node, dict):
        for key in _ID_KEYS:
            value = node.get(key)
            if isinstance(value, str) and value:
                node[key] = base64.b64decode(value).hex()
        for value in node.values():
            _ids_to_hex(value)
    elif isinstance(node, list):
        for item in node:
            _ids_to_hex(item)


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> dict:
    """Encode spans as one OTLP JSON ExportTraceServiceRequest (a dict)."""
    payload = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    _ids_to_hex(payload)
    return payload


class OtlpJsonLinesExporter(SpanExporter):
    """Writes each export batch as one OTLP JSON line; never raises into the pipeline.

    The file is truncated when the exporter is made (one file, one call) unless ``append``.
    """

    def __init__(self, path: Path, *, append: bool = False) -> None:
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self._path, "a" if append else "w", encoding="utf-8")
        self.spans_written = 0
        self.failures = 0

    @property
    def path(self) -> Path:
        return self._path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            line = json.dumps(spans_to_otlp_json(spans), separators=(",", ":"))
            with self._lock:
                self._file.write(line + "\n")
                self._file.flush()
                os.fsync(self._file.fileno())
            self.spans_written += len(spans)
            return SpanExportResult.SUCCESS
        except Exception:  # exporters never raise into the pipeline
            self.failures += 1
            log.exception("could not write spans to %s", self._path)
            return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is already flushed to disk
