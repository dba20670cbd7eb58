"""What the observer's metrics cost, per observation, in microseconds.

- pipeline side: ``MetricsRecorder.record_turn`` on the pipeline's thread (turn → observations,
  hand-off to the worker), divided by the observations the turn makes; goal <= 2 us;
- worker side: the SDK calls those observations take on the recorder's own thread (real
  MeterProvider with a Prometheus reader, the explicit buckets, exemplars from the turn's span);
- the SDK called directly on the pipeline's thread, for comparison (what a naive recorder pays).

    .venv/bin/python bench/metrics_cost.py [--tokens 100] [--turns 300]
"""

from __future__ import annotations

import argparse
import time

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from capture_cost import turn  # bench/ is on sys.path when a bench script runs
from voicetrace.capture.metrics_recorder import MetricsRecorder
from voicetrace.capture.turn_observations import turn_observations


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=100, help="tokens per LLM reply (one ITL observation each)")
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args(argv)
    tracer = TracerProvider().get_tracer("bench")
    recs = []
    for i in range(args.turns):
        rec = turn(i + 1, args.tokens)
        rec.span = tracer.start_span("turn")
        rec.language = "en"
        recs.append(rec)
    per_turn = len(turn_observations(recs[0], 1000.0))
    attrs = {"service.name": "bench", "deployment.environment": "bench", "gen_ai.request.model": "smol"}

    def run(direct: bool) -> tuple[float, float]:
        provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        recorder = MetricsRecorder(provider, attrs)
        recorder.record_turn(recs[0])  # instruments and attribute sets warm
        recorder.flush()
        start = time.perf_counter_ns()
        for rec in recs:
            if direct:
                recorder._record(turn_observations(rec, 1000.0), rec.span)
            else:
                recorder.record_turn(rec)
        pipeline_ns = time.perf_counter_ns() - start
        recorder.flush(60)
        total_ns = time.perf_counter_ns() - start
        recorder.close()
        provider.shutdown()
        n = per_turn * len(recs)
        return pipeline_ns / n / 1000, total_ns / n / 1000

    handed = [run(direct=False) for _ in range(3)]
    direct = min(run(direct=True)[0] for _ in range(3))
    pipeline_us = min(h[0] for h in handed)
    worker_us = min(h[1] for h in handed)
    print(f"metrics cost, goal: <= 2 us per observation on the pipeline ({per_turn} observations per turn, "
          f"{args.tokens} tokens)")
    print(f"  pipeline side (turn -> observations, hand-off)       {pipeline_us:6.2f} us")
    print(f"  worker side, until recorded (SDK, off the pipeline)  {worker_us:6.2f} us")
    print(f"  SDK called on the pipeline's thread (for comparison) {direct:6.2f} us")
    return {"pipeline_us": pipeline_us, "worker_us": worker_us, "direct_us": direct}


if __name__ == "__main__":
    main()
