"""Capture: pipecat frames → OpenTelemetry spans."""

from voicetrace.capture.observer import VoiceTraceObserver

__all__ = ["VoiceTraceObserver"]
