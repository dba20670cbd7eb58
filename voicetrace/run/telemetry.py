"""A run's OpenTelemetry wiring, in one place: a tracer provider that writes the folder's trace (and
exports live when asked), and the observer that turns the pipeline's frames into spans."""

from __future__ import annotations

import os
from dataclasses import dataclass

from voicetrace.run.folder import RunFolder


@dataclass
class Capture:
    observer: object
    """The VoiceTraceObserver: the pipeline's observer, tool sink and LLM call sink."""
    _provider: object
    _exporter: object
    _live: object | None

    def close(self, result) -> None:
        """End the conversation span, flush every span to the trace, note the counts on ``result``."""
        try:
            self.observer.finish()
        finally:
            self._provider.shutdown()
        result.turns = self.observer.turns_completed
        result.spans_written = self._exporter.spans_written
        result.otlp = self._live.stats if self._live else None


def start_capture(folder: RunFolder, options, config, run_id: str, call) -> Capture:
    """The provider (trace file, live OTLP export) and the observer for one run; nothing global is set."""
    from voicetrace import semconv as sc
    from voicetrace.capture.observer import VoiceTraceObserver
    from voicetrace.clock import RunClock
    from voicetrace.export import attach_live_export, environment_from, run_resource_attributes
    from voicetrace.tracing import make_tracer_provider

    provider, exporter = make_tracer_provider(
        folder.trace,
        service_name=options.service_name,
        resource_attributes={
            "voice.run.id": run_id,
            **run_resource_attributes(config.as_dict(), run_id, call.path.name,
                                      environment_from(os.environ, options.environment)),
        },
    )
    live = attach_live_export(provider, options.otlp, warn=options.on_warning) if options.otlp else None
    observer = VoiceTraceObserver(
        tracer_provider=provider,
        clock=RunClock(),
        capture_content=options.capture_content,
        redact=options.redact,
        conversation_id=run_id,
        conversation_attributes={
            sc.ATTR_CALL_FILE: call.path.name,
            sc.ATTR_CALL_DURATION_MS: call.duration_ms,
            sc.ATTR_PIPELINE: "reference",
        },
        stage_attributes={
            sc.SPAN_ASR: {sc.ATTR_ASR_MODEL: f"whisper-{config.asr_model_name}"},
            sc.SPAN_LLM: {
                sc.ATTR_GENAI_REQUEST_MODEL: config.llm_model,
                sc.ATTR_GENAI_SYSTEM: "openai-compatible",
                sc.ATTR_GENAI_SERVER_ADDRESS: config.llm_base_url,
            },
            sc.SPAN_TTS: {sc.ATTR_TTS_VOICE: config.tts_voice},
        },
    )
    return Capture(observer, provider, exporter, live)
