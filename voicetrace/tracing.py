"""Tracer provider and exporters for a run.

Spans always go to ``trace.jsonl``: OpenTelemetry's OTLP JSON encoding, one
ExportTraceServiceRequest per line, appended and flushed per batch so a crash loses at
most the last batch. Library code never touches the OpenTelemetry globals: the provider
built here is passed to whoever records spans.
"""

from __future__ import annotations

import base64
import logging
import os
import platform
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from voicetrace import __version__

log = logging.getLogger(__name__)

MAX_EVENTS_PER_SPAN = 16_384
"""Token events per llm span kept (the SDK default, 128, would cut replies short)."""

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
    message = encode_spans(spans)
    payload = json_format.MessageToDict(message, use_integers_for_enums=True)
    _ids_to_hex(payload)
    return payload


class OtlpJsonLinesExporter(SpanExporter):
    """Appends each export batch as one OTLP JSON line; never raises into the pipeline."""

    def __init__(self, path: Path) -> None:
        import json

        self._json = json
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self._path, "a", encoding="utf-8")
        self.spans_written = 0
        self.failures = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            line = self._json.dumps(spans_to_otlp_json(spans), separators=(",", ":"))
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
        return True


def make_resource(service_name: str, extra: Mapping[str, Any] | None = None) -> Resource:
    attributes: dict[str, Any] = {
        "service.name": service_name,
        "service.version": __version__,
        "host.name": platform.node(),
        "host.arch": platform.machine(),
        "process.runtime.name": platform.python_implementation(),
        "process.runtime.version": platform.python_version(),
    }
    attributes.update(extra or {})
    return Resource.create(attributes)


def make_tracer_provider(
    trace_path: Path,
    service_name: str = "voicetrace",
    resource_attributes: Mapping[str, Any] | None = None,
    schedule_delay_ms: int = 500,
) -> tuple[TracerProvider, OtlpJsonLinesExporter]:
    """A provider that writes to ``trace_path`` in batches of at most ``schedule_delay_ms``."""
    # One event per token: the SDK's default of 128 events per span would drop most of a long reply.
    limits = SpanLimits(max_events=MAX_EVENTS_PER_SPAN, max_attributes=256)
    provider = TracerProvider(resource=make_resource(service_name, resource_attributes), span_limits=limits)
    exporter = OtlpJsonLinesExporter(trace_path)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=schedule_delay_ms, max_export_batch_size=512)
    )
    return provider, exporter
