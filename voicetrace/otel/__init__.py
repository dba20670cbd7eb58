"""How spans leave the process: the one resource, the OTLP JSON-lines file, live OTLP export,
the tracer provider, and ``CallTrace``, which wires them to the observer for one call.

Nothing here sets OpenTelemetry globals: providers are built and handed to whoever records spans.
Modules are imported directly (``voicetrace.otel.jsonl`` needs no pipecat; ``call_trace`` does).
"""
