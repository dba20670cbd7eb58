"""voicetrace: where every millisecond of a voice agent's reply goes."""

__version__ = "0.1.0"

__all__ = ["CallTrace", "__version__"]


def __getattr__(name: str):
    # Lazy: ``import voicetrace`` must not pull in pipecat (the report side never needs it).
    if name == "CallTrace":
        from voicetrace.otel.call_trace import CallTrace

        return CallTrace
    raise AttributeError(f"module 'voicetrace' has no attribute {name!r}")
