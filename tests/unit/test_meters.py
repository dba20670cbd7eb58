"""Where metrics go: the standard variables, a scrape endpoint of its own, and an OTLP endpoint that
does not answer costing one warning."""

from __future__ import annotations

import socket
import time
import urllib.request

import pytest

from voicetrace import metric_names as mn
from voicetrace.otel.meters import DEFAULT_PROMETHEUS_HOST, resolve_metrics_export
from voicetrace.otel.target import GRPC, HTTP, OtlpConfigError, OtlpTarget

HTTP_TARGET = OtlpTarget("http://collector:4318/v1/traces", HTTP)


def test_otlp_metrics_follow_the_traces_endpoint_only_when_asked():
    assert resolve_metrics_export(HTTP_TARGET, None, {}).otlp is None  # spans only: Jaeger takes no metrics
    on = resolve_metrics_export(HTTP_TARGET, None, {"OTEL_METRICS_EXPORTER": "otlp"})
    assert on.otlp.endpoint == "http://collector:4318/v1/metrics"
    grpc = resolve_metrics_export(OtlpTarget("http://collector:4317", GRPC), None, {"OTEL_METRICS_EXPORTER": "otlp"})
    assert (grpc.otlp.endpoint, grpc.otlp.protocol) == ("http://collector:4317", GRPC)
    own = resolve_metrics_export(HTTP_TARGET, None, {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:9/x"})
    assert own.otlp.endpoint == "http://m:9/x"
    assert resolve_metrics_export(None, None, {"OTEL_METRICS_EXPORTER": "otlp"}).otlp is None  # nowhere to send


def test_prometheus_endpoint_from_the_flag_or_the_variables_loopback_by_default():
    assert resolve_metrics_export(None, 9500, {}).prometheus == (DEFAULT_PROMETHEUS_HOST, 9500) == ("127.0.0.1", 9500)
    env = {"OTEL_METRICS_EXPORTER": "prometheus", "OTEL_EXPORTER_PROMETHEUS_PORT": "9600"}
    assert resolve_metrics_export(None, None, env).prometheus == ("127.0.0.1", 9600)
    assert resolve_metrics_export(None, 9700, env).prometheus == ("127.0.0.1", 9700)  # the flag wins
    assert resolve_metrics_export(None, None, {}).prometheus is None
    with pytest.raises(OtlpConfigError):
        resolve_metrics_export(None, None, {"OTEL_METRICS_EXPORTER": "statsd"})
    with pytest.raises(OtlpConfigError):
        resolve_metrics_export(None, 70000, {})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _trace_with_one_turn(tmp_path, **options):
    """A CallTrace whose observer has seen one scripted turn (test_observer's)."""
    import asyncio

    from pipecat.frames.frames import EndFrame, StartFrame
    from pipecat.observers.base_observer import FramePushed
    from pipecat.processors.frame_processor import FrameDirection

    from tests.unit.test_observer import MS, play_turn
    from voicetrace import CallTrace

    vt = CallTrace(tmp_path / "trace.jsonl", conversation_id="call-42", **options).open()
    vt.observer._frame_time_ns = lambda data: data.timestamp

    class Pusher:
        observer = vt.observer

        async def push(self, at_ms, frame, source=None):
            await vt.observer.on_push_frame(FramePushed(source=source, destination=None, frame=frame,
                                                        direction=FrameDirection.DOWNSTREAM, timestamp=int(at_ms * MS)))

    async def call():
        p = Pusher()
        await p.push(0, StartFrame())
        await play_turn(p, 800)
        await p.push(9000, EndFrame())

    asyncio.run(call())
    assert vt.observer.metrics.flush(5.0)
    return vt


def test_call_trace_serves_its_metrics_on_loopback_without_the_conversation_id(tmp_path):
    vt = _trace_with_one_turn(tmp_path, otlp=False, prometheus_port=0)
    endpoint = vt.meters.prometheus
    assert endpoint.host == "127.0.0.1"
    text = urllib.request.urlopen(endpoint.url, timeout=5).read().decode()
    assert 'voice_v2v_duration_milliseconds_sum{' in text and "} 1110.0" in text
    for inst in (mn.V2V, mn.TTFT, mn.TURNS, mn.ERRORS, mn.BARGE_INS, mn.OVER_BUDGET):
        assert mn.prometheus_name(inst) in text, inst.name
    assert "call-42" not in text  # not a label, not on target_info
    vt.close()
    with pytest.raises(OSError):
        urllib.request.urlopen(endpoint.url, timeout=2)


def test_unreachable_otlp_metrics_endpoint_costs_one_warning_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    warnings: list[str] = []
    dead = OtlpTarget(f"http://127.0.0.1:{_free_port()}/v1/traces", HTTP)
    vt = _trace_with_one_turn(tmp_path, otlp=dead, on_warning=warnings.append)
    started = time.monotonic()
    vt.close()
    assert time.monotonic() - started < 15  # bounded by the exporters' timeouts, never stuck
    metric_warnings = [w for w in warnings if "metrics" in w]
    assert len(metric_warnings) == 1, warnings
    assert "127.0.0.1" in metric_warnings[0]
    assert vt.spans_written > 0  # the spans went to trace.jsonl regardless
