"""Read spans from every source into one span model (SpanTables) and normalise other tracers' spans.

Readers: ``files`` (trace files and run folders: OTLP JSON lines or documents, Jaeger JSON), ``jaeger``
(Jaeger's query API); decoders: ``otlp_json``, ``jaeger_json``; normalisers (``normalise``): ``pipecat``,
``server_spans``; ``gguf`` reads a model's attention shape for the KV-cache estimate.
"""
