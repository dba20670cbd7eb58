"""Regenerate the synthetic example trace tests/data/jaeger_source.jsonl from synth.

The other inputs come from real software: jaeger_trace.json / jaeger_trace.v3.json are these spans as a
real Jaeger returns them (tests/data/make_jaeger_trace.py, run it after this); pipecat_trace.jsonl is
pipecat's own tracing of a real call (pipelines/make_pipecat_trace.py).

    .venv/bin/python -m tests.data.make_inputs && .venv/bin/python -m tests.data.make_jaeger_trace
"""

from __future__ import annotations

from pathlib import Path

from tests.report.synth import Turn, call_spans, write_trace

HERE = Path(__file__).parent


if __name__ == "__main__":
    synth = call_spans([Turn(at=1000, transcript="jaeger one", language="en"),
                        Turn(at=9000, tool=40, prefill=30, transcript="jaeger two", language="en")], call="jaeger.wav")
    write_trace(HERE / "jaeger_source.jsonl", [synth])
