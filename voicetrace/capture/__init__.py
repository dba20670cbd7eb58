"""Capture: pipecat frames → OpenTelemetry spans.

``observer`` (frame intake) → ``turn_tracker`` (frames → TurnRecords, which turn owns what; no
OpenTelemetry) → ``span_builder`` (records → spans). ``sinks`` is what instrumented services use;
``llm_stream`` times an OpenAI-compatible LLM service (``LLMInstrumentor``), ``wire`` at the socket.
Integration time: ``loop_lag`` (event-loop lag monitor), ``integration`` (who blocked the loop, queue
waits), ``realtime`` (did the call keep up with real time).
"""

__all__ = ["VoiceTraceObserver"]


def __getattr__(name: str):
    # Lazy, so the tracker and the sinks import without OpenTelemetry.
    if name == "VoiceTraceObserver":
        from voicetrace.capture.observer import VoiceTraceObserver

        return VoiceTraceObserver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
