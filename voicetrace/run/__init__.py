"""Replaying one call through the reference pipeline into a run folder.

``run_call(RunOptions(...), progress) -> RunResult`` is the entry point (``call``). Its parts, one job
each: ``options`` (what goes in and out, checked before anything exists), ``folder`` (the run folder's
file names and run.json), ``metadata`` (what run.json says), ``backend`` (the LLM server),
``telemetry`` (tracer provider and observer), ``replay`` (the pipecat assembly), ``lifecycle``
(signals, the embedded server's watchdog, pipecat's logs).
"""

from __future__ import annotations

_EXPORTS = {"run_call": "call", "RunOptions": "options", "RunResult": "options", "RunError": "options",
            "RunInterrupted": "options", "RunFolder": "folder", "LLMBackend": "backend"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    # Lazy: voicetrace.audio.recorder imports run.folder, and run.call imports the recorder.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
