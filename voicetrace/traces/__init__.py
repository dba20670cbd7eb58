"""Read spans from OTLP JSON (files, later Jaeger and pipecat) into DataFrames."""
