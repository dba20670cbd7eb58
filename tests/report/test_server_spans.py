"""vLLM-shaped server request spans under the client's llm span: derived queue/prefill/decode
intervals when the clocks agree, a skew report (and nothing drawn) when they don't."""

from __future__ import annotations

import math

import pytest

from voicetrace import semconv as sc
from voicetrace.report import build_report
from voicetrace.traces.server_spans import SKEW_NOTE, derive_server_spans
from voicetrace.traces.files import read_trace_files

from tests.report.synth import MS, T0, Turn, _span, call_spans, write_trace


def vllm_span(trace_id, llm_span, start_off_ms, end_off_ms, queue_s, prefill_s, decode_s):
    start = (int(llm_span["startTimeUnixNano"]) - T0) / MS + start_off_ms
    end = (int(llm_span["endTimeUnixNano"]) - T0) / MS + end_off_ms
    return _span(trace_id, llm_span["spanId"], "llm_request", start, end, {
        "gen_ai.latency.time_in_queue": queue_s,
        "gen_ai.latency.time_in_model_prefill": prefill_s,
        "gen_ai.latency.time_in_model_decode": decode_s,
        "gen_ai.latency.time_to_first_token": queue_s + prefill_s,
    })


def trace_with_server_span(tmp_path, start_off_ms, end_off_ms):
    spans = call_spans([Turn(at=2000, ttft=200, tokens=10, itl=20)])
    llm = next(s for s in spans if s["name"] == sc.SPAN_LLM)
    spans.append(vllm_span(llm["traceId"], llm, start_off_ms, end_off_ms, 0.030, 0.100, 0.150))
    return read_trace_files([write_trace(tmp_path / "t.jsonl", [spans])]), llm


def test_server_span_inside_the_client_span_gives_queue_prefill_decode(tmp_path):
    tables, llm = trace_with_server_span(tmp_path, 5, -5)
    out = derive_server_spans(tables)
    skew = out.notes[SKEW_NOTE]
    assert skew.empty
    kids = out.spans[out.spans["parent_span_id"] == llm["spanId"]].set_index("name")
    server_start = int(llm["startTimeUnixNano"]) + 5 * MS
    assert kids.loc[sc.SPAN_LLM_QUEUE, "start_ns"] == server_start
    assert kids.loc[sc.SPAN_LLM_QUEUE, "end_ns"] == server_start + 30 * MS
    assert kids.loc[sc.SPAN_LLM_PREFILL, "end_ns"] == server_start + 130 * MS
    assert kids.loc[sc.SPAN_LLM_DECODE, "end_ns"] == server_start + 280 * MS
    # The breakdown carves queue and prefill out of TTFT and still sums exactly to V2V.
    report = build_report(tables)
    row = report.turns.iloc[0]
    assert row["bd_llm_queue_ms"] == pytest.approx(30)
    assert row["bd_llm_prefill_ms"] == pytest.approx(100)
    parts = [row[c] for c in report.turns.columns if c.startswith("bd_") and c.endswith("_ms")]
    assert math.fsum(p for p in parts if not math.isnan(p)) == pytest.approx(row["v2v_ms"], abs=1e-6)


def test_server_clock_outside_the_client_span_is_reported_not_drawn(tmp_path):
    tables, llm = trace_with_server_span(tmp_path, -250, -250)  # server clock 250 ms behind
    out = derive_server_spans(tables)
    skew = out.notes[SKEW_NOTE]
    assert list(skew["skew_ms"]) == [pytest.approx(250)]
    assert not out.spans["name"].isin([sc.SPAN_LLM_QUEUE, sc.SPAN_LLM_PREFILL, sc.SPAN_LLM_DECODE]).any()
    report = build_report(tables)
    assert len(report.server_skew) == 1
    assert math.isnan(report.turns.iloc[0]["bd_llm_queue_ms"])  # not drawn: missing, not zero
