"""pipecat-native spans through the real OTLP exporter into a real Jaeger, read back by `report --jaeger`:
the same turns (stt → ASR transcript, metrics.ttfb → TTFT and TTS TTFB) as the report of the file.

The spans are pipecat's own (tests/data/pipecat_trace.jsonl, recorded by pipecat's tracing over a real
call: pipelines/make_pipecat_trace.py), re-sent through the OTLP exporter as if the call began 30 s ago."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time

import pandas as pd
import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from voicetrace.report import build_report
from voicetrace.traces.files import read_trace_files
from voicetrace.traces.jaeger import API_LEGACY, read_jaeger

from tests.conftest import ROOT, VOICETRACE
import orjson
from tests.integration.jaeger_server import Jaeger, wait_for
from tests.integration.test_jaeger_export import spans_named

pytestmark = pytest.mark.integration

PIPECAT_FILE = ROOT / "tests" / "data" / "pipecat_trace.jsonl"


def _plain(attributes: list) -> dict:
    return {kv["key"]: (int(v) if kind == "intValue" else v) for kv in attributes
            for kind, v in kv["value"].items()}


def pipecat_spans() -> list[dict]:
    """Every span of pipecat's own trace, raw (OTLP JSON), attributes as a plain dict under ``attrs``."""
    spans = [s for line in PIPECAT_FILE.read_bytes().splitlines() if line.strip()
             for rs in orjson.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    for s in spans:
        s["attrs"] = _plain(s.get("attributes", []))
    return sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))


def _of(name: str) -> list[dict]:
    return [s for s in pipecat_spans() if s["name"] == name]


COMPARED = ["turn", "transcript", "language", "asr_final_ms", "ttft_ms", "tts_ttfb_ms", "first_sentence_ms",
            "llm_e2e_ms", "reported_user_bot_ms", "input_tokens", "v2v_ms"]


@pytest.fixture(scope="module")
def jaeger_with_pipecat_spans(tmp_path_factory):
    jaeger = Jaeger(tmp_path_factory.mktemp("jaeger") / "jaeger.log").start()
    service = f"vt-pipecat-{secrets.token_hex(3)}"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=jaeger.otlp_grpc, insecure=True)))
    tracer = provider.get_tracer("pipecat")  # our own provider: no OpenTelemetry globals set
    started: dict[str, otel_trace.Span] = {}
    shaped = pipecat_spans()  # what pipecat's tracing records: conversation → turn → stt / llm / tts
    shift_ns = time.time_ns() - 30 * 10**9 - int(shaped[0]["startTimeUnixNano"])  # the call began 30 s ago
    for raw in shaped:
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            raw[key] = str(int(raw[key]) + shift_ns)
    ids = {raw["spanId"] for raw in shaped}
    pending = list(shaped)
    ordered: list[dict] = []  # parents before children (pipecat starts some stt spans before their turn)
    while pending:
        done = {r["spanId"] for r in ordered}
        ready = [r for r in pending if r.get("parentSpanId") not in ids or r["parentSpanId"] in done]
        ordered += ready
        pending = [r for r in pending if r not in ready]
    for raw in ordered:
        parent = started.get(raw.get("parentSpanId", ""))
        context = otel_trace.set_span_in_context(parent) if parent is not None else None
        started[raw["spanId"]] = tracer.start_span(raw["name"], context=context, attributes=raw["attrs"],
                                                   start_time=int(raw["startTimeUnixNano"]))
    for raw in sorted(shaped, key=lambda s: int(s["endTimeUnixNano"])):
        started[raw["spanId"]].end(end_time=int(raw["endTimeUnixNano"]))
    provider.shutdown()
    trace_id = format(started[shaped[0]["spanId"]].get_span_context().trace_id, "032x")
    try:
        wait_for(lambda: len(spans_named(jaeger.find_v3(service), "stt")) == len(_of("stt")), 30, "the spans in Jaeger")
        yield {"jaeger": jaeger, "service": service, "trace_id": trace_id, "spans": len(shaped)}
    finally:
        jaeger.stop()


@pytest.mark.parametrize("api", [None, API_LEGACY])
def test_pipecat_spans_read_back_from_jaeger_give_the_file_reports_turns(jaeger_with_pipecat_spans, api):
    run = jaeger_with_pipecat_spans
    tables = read_jaeger(run["jaeger"].query_url, trace_ids=[run["trace_id"]], api=api)
    assert len(tables.spans) == run["spans"] and tables.skipped == 0
    from_jaeger = build_report(tables).turns
    from_file = build_report(read_trace_files([PIPECAT_FILE])).turns
    assert list(from_jaeger["transcript"]) == [s["attrs"]["transcript"] for s in _of("stt")]
    assert list(from_jaeger["ttft_ms"]) == pytest.approx([s["attrs"]["metrics.ttfb"] * 1000 for s in _of("llm")], abs=0.002)
    pd.testing.assert_frame_equal(from_jaeger[COMPARED], from_file[COMPARED], check_exact=False, atol=1e-3)


def test_report_jaeger_cli_on_pipecat_spans(jaeger_with_pipecat_spans):
    run = jaeger_with_pipecat_spans
    done = subprocess.run([str(VOICETRACE), "report", "--jaeger", run["jaeger"].query_url, "--service", run["service"],
                           "--since", "1h", "--json"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, COLUMNS="140"))
    assert done.returncode == 0, done.stderr
    turns = json.loads(done.stdout)["turns"]
    assert [t.get("transcript") for t in turns] == [s["attrs"]["transcript"] for s in _of("stt")]
    assert [t["ttft_ms"] for t in turns] == pytest.approx([s["attrs"]["metrics.ttfb"] * 1000 for s in _of("llm")], abs=0.002)
    assert [t["tts_ttfb_ms"] for t in turns] == pytest.approx([s["attrs"]["metrics.ttfb"] * 1000 for s in _of("tts")], abs=0.002)
    assert not [o for o in json.loads(done.stdout)["other_spans"] if o["name"] == "stt"]  # mapped, not "other"
