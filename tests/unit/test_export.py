"""OTLP target resolution (voicetrace.otel.target) and the non-blocking live export processor
(voicetrace.otel.live), with in-memory exporters."""

from __future__ import annotations

import threading
import time

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from voicetrace.errors import UsageError
from voicetrace.otel.live import LiveExportProcessor, attach_live_export
from voicetrace.otel.target import GRPC, HTTP, OtlpConfigError, env_headers, resolve_otlp_target


@pytest.mark.parametrize("url, protocol, endpoint", [
    ("http://localhost:4317", GRPC, "http://localhost:4317"),
    ("localhost:4317", GRPC, "http://localhost:4317"),
    ("grpc://collector:9999", GRPC, "http://collector:9999"),
    ("http://localhost:4318", HTTP, "http://localhost:4318/v1/traces"),
    ("https://otlp.example.com/v1/traces", HTTP, "https://otlp.example.com/v1/traces"),
    ("https://otlp.example.com/otlp", HTTP, "https://otlp.example.com/otlp/v1/traces"),
])
def test_protocol_and_endpoint_follow_the_url(url, protocol, endpoint):
    target = resolve_otlp_target(url, None, {})
    assert (target.protocol, target.endpoint) == (protocol, endpoint)


def test_explicit_protocol_wins_then_url_then_environment():
    assert resolve_otlp_target("http://h:4318", "grpc", {}).protocol == GRPC
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert resolve_otlp_target("http://h:4318", None, env).protocol == HTTP
    assert resolve_otlp_target("http://h:9000", None, env).protocol == GRPC
    assert resolve_otlp_target("http://h:9000", None, {}).protocol == HTTP


def test_standard_environment_variables():
    assert resolve_otlp_target(None, None, {}) is None
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20abc,x-tenant=t1",
    }
    target = resolve_otlp_target(None, None, env)
    assert target.endpoint == "http://jaeger:4318/v1/traces" and target.protocol == HTTP
    assert target.headers == {"authorization": "Bearer abc", "x-tenant": "t1"}
    # The per-signal endpoint is used as given; --otlp beats both.
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://jaeger:4318/custom"
    assert resolve_otlp_target(None, None, env).endpoint == "http://jaeger:4318/custom"
    assert resolve_otlp_target("http://other:4317", None, env).endpoint == "http://other:4317"


@pytest.mark.parametrize("url, protocol", [("ftp://x:1", None), ("http://h:4318", "http/json"), ("http://:80", None)])
def test_bad_settings_are_one_line_errors(url, protocol):
    with pytest.raises(OtlpConfigError):
        resolve_otlp_target(url, protocol, {})
    with pytest.raises(OtlpConfigError):
        env_headers("novalue")
    assert issubclass(OtlpConfigError, UsageError)


def test_headers_are_parsed_the_way_opentelemetry_parses_them():
    # Lenient like the OTLP exporters: an unencoded space is kept; names are lower-cased.
    assert env_headers(" Authorization = Bearer abc , x-a=b%2Cc") == {"authorization": "Bearer abc", "x-a": "b,c"}
    with pytest.raises(OtlpConfigError, match="'=oops'"):
        env_headers("a=b,=oops")
    # The per-signal variable's headers win over the general one.
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=2",
           "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=3"}
    assert resolve_otlp_target(None, None, env).headers == {"a": "1", "b": "3"}


class BlockingExporter(InMemorySpanExporter):
    """Hangs in export until released: a backend that is slow or gone."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.release = threading.Event()
        self.fail = fail
        self.shut = False

    def export(self, spans):
        self.release.wait(10)
        if self.fail or self.shut:
            return SpanExportResult.FAILURE
        return super().export(spans)

    def shutdown(self):
        self.shut = True
        self.release.set()


def make(exporter, **options):
    provider = TracerProvider()
    warnings: list[str] = []
    processor = LiveExportProcessor(exporter, warn=warnings.append, **options)
    provider.add_span_processor(processor)
    return provider, provider.get_tracer("t"), processor, warnings


def test_turn_end_flushes_without_waiting_for_the_schedule():
    exporter = InMemorySpanExporter()
    provider, tracer, processor, _ = make(exporter, schedule_delay_ms=60_000)
    with tracer.start_as_current_span("turn"):
        tracer.start_span("llm").end()
    deadline = time.monotonic() + 5
    while len(exporter.get_finished_spans()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # polling a condition
    assert {s.name for s in exporter.get_finished_spans()} == {"turn", "llm"}
    provider.shutdown()
    assert processor.stats.spans_sent == 2 and processor.stats.spans_undelivered == 0


def test_a_stuck_backend_never_blocks_spans_and_is_counted():
    exporter = BlockingExporter()
    provider, tracer, processor, warnings = make(exporter, max_queue_spans=10, max_batch_spans=5,
                                                 schedule_delay_ms=10, shutdown_timeout_s=0.3)
    started = time.perf_counter()
    for i in range(100):
        tracer.start_span(f"s{i}").end()
    assert time.perf_counter() - started < 1.0  # the backend hangs; span ends do not
    provider.shutdown()
    stats = processor.stats
    assert stats.spans_sent == 0
    assert stats.spans_dropped >= 100 - 10 - 5
    assert stats.spans_undelivered == 100
    assert len(warnings) == 1 and "not delivered" in warnings[0]


def test_failed_batches_warn_once_and_count():
    exporter = BlockingExporter(fail=True)
    exporter.release.set()
    provider, tracer, processor, warnings = make(exporter, schedule_delay_ms=10)
    for _ in range(3):
        with tracer.start_as_current_span("turn"):
            pass
        processor.force_flush(2000)
    provider.shutdown()
    assert processor.stats.spans_failed == 3 and processor.stats.spans_undelivered == 3
    assert len(warnings) == 1


def test_attach_live_export_adds_a_processor_to_the_given_provider_only():
    provider = TracerProvider()
    target = resolve_otlp_target("http://127.0.0.1:9/v1/traces", None, {})
    processor = attach_live_export(provider, target, warn=lambda m: None, shutdown_timeout_s=0.5)
    assert processor in provider._active_span_processor._span_processors
    provider.shutdown()
