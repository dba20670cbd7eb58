"""A run's OpenTelemetry wiring: the library's one way (``voicetrace.CallTrace``) with the run's
resource, conversation and stage attributes — the same wiring a team uses in its own agent."""

from __future__ import annotations

from voicetrace.run.folder import RunFolder


def start_capture(folder: RunFolder, options, config, run_id: str, call):
    """An open CallTrace writing the folder's trace (and exporting live when asked); nothing global is set."""
    from voicetrace import CallTrace
    from voicetrace import semconv as sc
    from voicetrace.capture.llm_spans import llm_server_attributes

    return CallTrace(
        folder.trace,
        service_name=options.service_name,
        conversation_id=run_id,
        environment=options.environment,
        otlp=options.otlp or False,  # the CLI resolved --otlp and OTEL_EXPORTER_OTLP_* already
        capture_content=options.capture_content,
        redact=options.redact,
        pipeline_config=config.as_dict(),
        resource_attributes={sc.RES_RUN_ID: run_id, sc.ATTR_CALL_FILE: call.path.name},
        conversation_attributes={
            sc.ATTR_CALL_FILE: call.path.name,
            sc.ATTR_CALL_DURATION_MS: call.duration_ms,
            sc.ATTR_PIPELINE: "reference",
        },
        stage_attributes={
            sc.SPAN_ASR: {sc.ATTR_ASR_MODEL: f"whisper-{config.asr_model_name}"},
            sc.SPAN_LLM: {
                sc.ATTR_GENAI_REQUEST_MODEL: config.llm_model,
                sc.ATTR_GENAI_PROVIDER: "openai-compatible",
                **llm_server_attributes(config.llm_base_url),
            },
            sc.SPAN_TTS: {sc.ATTR_TTS_VOICE: config.tts_voice},
        },
        on_warning=options.on_warning,
        prometheus_port=options.prometheus_port,
        prometheus_linger_s=options.prometheus_linger_s,
    ).open()


def close_capture(trace, result) -> None:
    """End the conversation span, flush every span to the trace, note the counts on ``result``."""
    trace.close()
    result.turns = trace.observer.turns_completed
    result.spans_written = trace.spans_written
    result.otlp = trace.export_stats
    result.realtime = trace.observer.realtime.summary()
    if result.realtime["behind"]:
        signs = ", ".join(f"{k.replace('_', ' ')} up to {v['worst_ms']:,.0f} ms" for k, v in result.realtime.items()
                          if k != "behind" and v["count"])
        result.warnings.append(f"the run fell behind real time ({signs}): the marked turns measure an "
                               "overloaded machine, not the pipeline")
