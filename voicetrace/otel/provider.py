"""The tracer provider of one trace: the resource, span limits sized for token events, and the
file exporter behind a batch processor."""

from __future__ import annotations

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

MAX_EVENTS_PER_SPAN = 16_384
"""Token events per llm span kept (the SDK default, 128, would cut replies short)."""
MAX_ATTRIBUTES_PER_SPAN = 256
FILE_SCHEDULE_DELAY_MS = 500
"""The file gets a batch at least this often (a crash loses at most this much)."""


def make_tracer_provider(
    resource: Resource, exporter: SpanExporter, *, schedule_delay_ms: int = FILE_SCHEDULE_DELAY_MS
) -> TracerProvider:
    """A provider (not the global one) that hands ``exporter`` batches every ``schedule_delay_ms``."""
    limits = SpanLimits(max_events=MAX_EVENTS_PER_SPAN, max_attributes=MAX_ATTRIBUTES_PER_SPAN)
    provider = TracerProvider(resource=resource, span_limits=limits)
    provider.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=schedule_delay_ms, max_export_batch_size=512)
    )
    return provider
