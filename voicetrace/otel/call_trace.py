"""``CallTrace``: the one way to wire voicetrace into a pipecat agent (``voicetrace run`` uses it too).

    with CallTrace("trace.jsonl", service_name="my-agent") as vt:
        vt.instrument_llm(llm)                                  # optional: client-side LLM timing
        worker = PipelineWorker(pipeline, observers=[vt.observer])
        ...
    # observer finished, spans flushed: voicetrace report trace.jsonl

One call, one file: the file is replaced unless ``append=True``. Every span carries the same
resource (voicetrace.otel.resource): service.name, deployment.environment, conversation.id and the
pipeline configuration, personal settings only under content capture. ``record_audio=True`` (off unless
asked: a recording is personal data) also writes the call's audio beside the trace — call.wav, caller
left, bot right, on the call's timeline (voicetrace.capture.audio_tap) — for the acoustic check and the
HTML report's player.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from opentelemetry.sdk.trace import TracerProvider

from voicetrace import semconv as sc
from voicetrace.capture import VoiceTraceObserver
from voicetrace.capture.audio_tap import CallAudioTap
from voicetrace.capture.content import ContentPolicy
from voicetrace.clock import RunClock
from voicetrace.otel.jsonl import OtlpJsonLinesExporter
from voicetrace.otel.live import ExportStats, LiveExportProcessor, attach_live_export, export_summary
from voicetrace.otel.meters import Meters, resolve_metrics_export
from voicetrace.otel.provider import make_tracer_provider
from voicetrace.otel.resource import build_resource, pipeline_config_attributes
from voicetrace.otel.target import OtlpTarget, resolve_otlp_target
from voicetrace.run.folder import RunFolder


def new_conversation_id() -> str:
    return uuid.uuid4().hex


class CallTrace:
    """Tracer provider, file and live export, and the observer for one call.

    ``otlp``: where to send spans live; ``None`` follows OTEL_EXPORTER_OTLP_* (off when unset),
    ``False`` turns live export off. ``capture_content``: ``None`` follows
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT. ``pipeline_config`` becomes
    ``voice.pipeline.config.*``; ``resource_attributes`` are added to the resource as they are.
    Settings are checked here (a bad OTLP variable raises ``OtlpConfigError``); nothing is created
    until the trace is opened (``with`` or ``open()``).

    Metrics (docs/METRICS.md): ``meter_provider`` records into yours (you own its lifecycle); else
    ``prometheus_port`` serves a scrape endpoint (loopback; 0 picks a free port, see
    ``vt.meters.prometheus.url``) and OTEL_METRICS_EXPORTER=otlp sends them where the spans go.
    ``prometheus_linger_s``: on close, wait up to this long for one more scrape (a short-lived
    process's last numbers). ``v2v_budget_ms``: voice.turns.over_budget's threshold (1000).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        service_name: str | None = None,
        conversation_id: str | None = None,
        environment: str | None = None,
        otlp: OtlpTarget | Literal[False] | None = None,
        capture_content: bool | None = None,
        redact: bool = False,
        pipeline_config: Mapping[str, Any] | None = None,
        conversation_attributes: Mapping[str, Any] | None = None,
        stage_attributes: Mapping[str, Mapping[str, Any]] | None = None,
        resource_attributes: Mapping[str, Any] | None = None,
        clock: RunClock | None = None,
        on_warning: Callable[[str], None] | None = None,
        append: bool = False,
        record_audio: bool = False,
        meter_provider=None,
        prometheus_port: int | None = None,
        prometheus_linger_s: float = 0.0,
        v2v_budget_ms: float | None = None,
    ) -> None:
        if record_audio and append:
            raise ValueError("CallTrace: record_audio needs one call per folder (call.wav beside the trace); "
                             "append=True pools calls in one file")
        self.path = Path(path)
        self.record_audio = record_audio
        self.conversation_id = conversation_id or new_conversation_id()
        self.content = ContentPolicy.from_flags(capture_content, redact)
        self.otlp: OtlpTarget | None = resolve_otlp_target(None, None, os.environ) if otlp is None else (otlp or None)
        self.clock = clock or RunClock()
        attributes = {
            **pipeline_config_attributes(pipeline_config or {}, personal=self.content.text),
            **(resource_attributes or {}),
            sc.ATTR_CONVERSATION_ID: self.conversation_id,
        }
        self.resource = build_resource(service_name=service_name, environment=environment, attributes=attributes)
        self._conversation_attributes = conversation_attributes
        self._stage_attributes = stage_attributes
        self._on_warning = on_warning
        self._append = append
        self._exporter: OtlpJsonLinesExporter | None = None
        self._live: LiveExportProcessor | None = None
        self._closed = False
        self._instrumentors: list = []
        self.tracer_provider: TracerProvider | None = None
        self.observer: VoiceTraceObserver | None = None
        self.audio_tap: CallAudioTap | None = None
        self.recording: Path | None = None
        """call.wav once the trace is closed, when ``record_audio`` was asked for and audio was seen."""
        # Metrics (voicetrace.otel.meters): the caller's meter provider, else one of ours when the
        # environment, the OTLP target or ``prometheus_port`` gives the metrics somewhere to go.
        self.meter_provider = meter_provider
        self.metrics_export = None if meter_provider is not None else resolve_metrics_export(
            self.otlp, prometheus_port, os.environ)
        self.meters: Meters | None = None
        self._prometheus_linger_s = prometheus_linger_s
        self._v2v_budget_ms = v2v_budget_ms

    # --- lifecycle ------------------------------------------------------------------------
    def open(self) -> "CallTrace":
        if self.observer is not None:
            return self
        self._exporter = OtlpJsonLinesExporter(self.path, append=self._append)
        if self.record_audio:
            self.audio_tap = CallAudioTap(RunFolder(self.path.parent))
        self.tracer_provider = make_tracer_provider(self.resource, self._exporter)
        if self.otlp is not None:
            self._live = attach_live_export(self.tracer_provider, self.otlp, warn=self._on_warning)
        export = self.metrics_export
        if export is not None and (export.otlp is not None or export.prometheus is not None):
            self.meters = Meters(self.resource, export, warn=self._on_warning)
            self.meter_provider = self.meters.provider
        self.observer = VoiceTraceObserver(
            tracer_provider=self.tracer_provider,
            clock=self.clock,
            capture_content=self.content.capture,
            redact=self.content.redact,
            conversation_id=self.conversation_id,
            conversation_attributes=self._conversation_attributes,
            stage_attributes=self._stage_attributes,
            audio_tap=self.audio_tap,
            meter_provider=self.meter_provider,
            v2v_budget_ms=self._v2v_budget_ms,
        )
        return self

    def close(self) -> None:
        """Finish the observer (open turns, the conversation span), then flush every exporter."""
        if self.observer is None or self._closed:
            return
        self._closed = True
        for instrumentor in self._instrumentors:  # the service goes back to how it was
            instrumentor.uninstrument()
        try:
            self.observer.finish()
        finally:
            try:
                if self.audio_tap is not None:
                    self.recording = self.audio_tap.close()
            finally:
                self.tracer_provider.shutdown()
                self._close_metrics()

    def _close_metrics(self) -> None:
        """Every turn into the instruments; then (ours only) a last scrape if asked to wait for one,
        the final OTLP export and the scrape endpoint down."""
        if self.observer.metrics is not None:
            self.observer.metrics.close()
        if self.meters is None:
            return
        endpoint = self.meters.prometheus
        if endpoint is not None and self._prometheus_linger_s > 0:
            endpoint.wait_for_scrape(endpoint.scrapes, self._prometheus_linger_s)
        self.meters.shutdown()

    def __enter__(self) -> "CallTrace":
        return self.open()

    def __exit__(self, *exc_info) -> None:
        self.close()

    # --- wiring ---------------------------------------------------------------------------
    def instrument_llm(self, llm_service, **options: Any):
        """Client-side timing of an OpenAI-compatible pipecat LLM service (TTFT per chunk,
        traceparent); options go to the instrumentation (e.g. ``stall_timeout_s``)."""
        if self.observer is None:
            raise RuntimeError("CallTrace.instrument_llm: open the trace first (with CallTrace(...) as vt)")
        from voicetrace.capture.llm_stream import instrument_openai_llm

        options.setdefault("clock", self.clock)
        instrumentor = instrument_openai_llm(llm_service, self.observer, **options)
        self._instrumentors.append(instrumentor)
        return instrumentor

    # --- results --------------------------------------------------------------------------
    @property
    def spans_written(self) -> int:
        return self._exporter.spans_written if self._exporter is not None else 0

    @property
    def export_stats(self) -> ExportStats | None:
        """Live export's counts (None without live export); final once the trace is closed."""
        return self._live.stats if self._live is not None else None

    def export_summary(self) -> tuple[str, bool] | None:
        """The end-of-run line about live export and whether every span was delivered."""
        stats = self.export_stats
        return export_summary(self.otlp, stats) if stats is not None else None
