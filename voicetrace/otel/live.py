"""Live export: a span processor that ships spans to an OTLP exporter without ever blocking the
pipeline, and ``attach_live_export``, which adds one to a provider the caller passes in.

``on_end`` only puts the span on a bounded queue (a full queue drops the span and counts it);
one worker thread batches and exports. A turn's spans go out as soon as the turn ends (the
``turn`` span wakes the worker) and otherwise at least every ``schedule_delay_ms``. When the
backend is down or slow, the first failure calls ``warn`` once; spans that were not delivered
are counted, never retried forever: ``shutdown`` gives the queue ``shutdown_timeout_s`` to
drain, then stops and counts what is left. ``export_summary`` is the line a run ends with.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Collection

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from voicetrace.otel.target import GRPC, OtlpTarget

log = logging.getLogger(__name__)


@dataclass
class ExportStats:
    spans_sent: int = 0
    spans_failed: int = 0
    """Spans in batches the backend did not accept."""
    spans_dropped: int = 0
    """Spans that found the queue full (the backend could not keep up)."""
    spans_abandoned: int = 0
    """Spans still queued when shutdown's time ran out."""
    batches: int = 0
    export_ns_total: int = 0
    """Time spent inside the exporter (the worker thread), summed over batches."""
    on_end_ns_max: int = 0
    """Longest time ``on_end`` took: the whole cost the pipeline's thread ever paid."""

    @property
    def spans_undelivered(self) -> int:
        return self.spans_failed + self.spans_dropped + self.spans_abandoned


class LiveExportProcessor(SpanProcessor):
    def __init__(
        self,
        exporter: SpanExporter,
        *,
        warn: Callable[[str], None] | None = None,
        describe: str = "the OTLP backend",
        max_queue_spans: int = 4096,
        max_batch_spans: int = 512,
        schedule_delay_ms: int = 250,
        shutdown_timeout_s: float = 5.0,
        flush_on: Collection[str] = ("turn", "conversation"),
    ) -> None:
        self._exporter = exporter
        self._warn = warn or log.warning
        self._describe = describe
        self._queue: queue.Queue[ReadableSpan] = queue.Queue(maxsize=max_queue_spans)
        self._max_batch = max_batch_spans
        self._delay_s = schedule_delay_ms / 1000
        self._shutdown_timeout_s = shutdown_timeout_s
        self._flush_on = frozenset(flush_on)
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._shutdown_deadline = 0.0
        self._idle = threading.Condition()
        self._in_flight = 0
        self._warned = False
        self._ok_since_failure = True
        self.stats = ExportStats()
        self._worker = threading.Thread(target=self._run, name="voicetrace-otlp-export", daemon=True)
        self._worker.start()

    # --- pipeline side: never blocks, never raises ----------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        started = time.perf_counter_ns()
        try:
            if self._closing.is_set():
                self.stats.spans_abandoned += 1
                return
            try:
                self._queue.put_nowait(span)
            except queue.Full:
                self.stats.spans_dropped += 1
                self._warn_once("queue full: the backend is not keeping up")
            if span.name in self._flush_on:
                self._wake.set()
        except Exception:  # exporters never raise into the pipeline
            log.debug("live export: on_end failed", exc_info=True)
        finally:
            self.stats.on_end_ns_max = max(self.stats.on_end_ns_max, time.perf_counter_ns() - started)

    # --- worker ---------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._closing.is_set():
            self._wake.wait(self._delay_s)
            self._wake.clear()
            self._drain(deadline=None)
        # Shutting down: ship what is left, here (an export can't be interrupted from outside).
        self._drain(deadline=self._shutdown_deadline)

    def _drain(self, deadline: float | None) -> None:
        """Export everything queued (in batches) or until ``deadline`` (monotonic seconds)."""
        while deadline is None or time.monotonic() < deadline:
            if deadline is None and self._closing.is_set():
                return  # shutdown takes over, with its deadline
            batch = self._take_batch()
            if not batch:
                return
            self._export(batch)
            if deadline is not None and not self._ok_since_failure:
                return  # at shutdown, a backend that just failed gets no second chance

    def _take_batch(self) -> list[ReadableSpan]:
        batch: list[ReadableSpan] = []
        with self._idle:
            while len(batch) < self._max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._in_flight = len(batch)
            if not batch:
                self._idle.notify_all()
        return batch

    def _export(self, batch: list[ReadableSpan]) -> None:
        started = time.perf_counter_ns()
        try:
            ok = self._exporter.export(batch) == SpanExportResult.SUCCESS
        except Exception:  # a misbehaving exporter must not kill the worker
            log.debug("live export: exporter raised", exc_info=True)
            ok = False
        self.stats.export_ns_total += time.perf_counter_ns() - started
        self.stats.batches += 1
        if ok:
            self.stats.spans_sent += len(batch)
        else:
            self.stats.spans_failed += len(batch)
            self._warn_once("export failed: the backend is unreachable or too slow")
        self._ok_since_failure = ok
        with self._idle:
            self._in_flight = 0
            if self._queue.empty():
                self._idle.notify_all()

    def _warn_once(self, why: str) -> None:
        if self._warned:
            return
        self._warned = True
        try:
            self._warn(
                f"spans to {self._describe}: {why}; the run goes on and trace.jsonl stays complete "
                "(the count of spans not delivered is given at the end)"
            )
        except Exception:
            log.debug("live export: warn callback failed", exc_info=True)

    # --- lifecycle ------------------------------------------------------------------------
    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Wake the worker and wait (up to the timeout) until the queue is empty."""
        deadline = time.monotonic() + timeout_millis / 1000
        self._wake.set()
        with self._idle:
            while not (self._queue.empty() and self._in_flight == 0):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._worker.is_alive():
                    return False
                self._idle.wait(min(remaining, 0.1))
        return True

    def shutdown(self) -> None:
        if self._closing.is_set():
            return
        self._shutdown_deadline = time.monotonic() + self._shutdown_timeout_s
        self._closing.set()
        self._wake.set()
        self._worker.join(self._shutdown_timeout_s)
        # Still stuck in an export: shutting the exporter down aborts its retries and backoff.
        self._shutdown_exporter()
        self._worker.join(1.0)
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self.stats.spans_abandoned += 1

    def _shutdown_exporter(self) -> None:
        try:
            self._exporter.shutdown()
        except Exception:
            log.debug("live export: exporter shutdown failed", exc_info=True)


EXPORT_TIMEOUT_S = 3.0
"""One export attempt (with the exporter's own retries) gives up after this long."""


def make_span_exporter(target: OtlpTarget, timeout_s: float = EXPORT_TIMEOUT_S) -> SpanExporter:
    if target.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=target.endpoint, insecure=target.insecure, headers=dict(target.headers), timeout=timeout_s)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=target.endpoint, headers=dict(target.headers), timeout=timeout_s)


def attach_live_export(
    provider: TracerProvider,
    target: OtlpTarget,
    warn: Callable[[str], None] | None = None,
    **processor_options: Any,
) -> LiveExportProcessor:
    """Send the provider's spans to ``target`` as they end; returns the processor (its ``stats``)."""
    processor = LiveExportProcessor(make_span_exporter(target), warn=warn, describe=target.describe(), **processor_options)
    provider.add_span_processor(processor)
    return processor


def quiet_exporter_logs() -> None:
    """For applications (the CLI): the OTLP exporters log every failed attempt; voicetrace says it
    once itself. Library code does not call this."""
    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.trace.export"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def export_summary(target: OtlpTarget, stats: ExportStats) -> tuple[str, bool]:
    """One line for the end of a run, and whether every span was delivered."""
    if stats.spans_undelivered == 0:
        mean_ms = stats.export_ns_total / max(stats.batches, 1) / 1e6
        return (
            f"otlp: {stats.spans_sent} spans sent to {target.describe()} in {stats.batches} batches "
            f"(mean {mean_ms:.1f} ms each, off the pipeline; longest hand-off {stats.on_end_ns_max / 1000:.0f} µs)",
            True,
        )
    return (
        f"warning: otlp: {stats.spans_undelivered} spans not delivered to {target.describe()} "
        f"({stats.spans_sent} sent); trace.jsonl has them all",
        False,
    )
