"""Every trace input the report accepts gives the same turns table."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import orjson
import pytest

from voicetrace.report import build_report
from voicetrace.analysis.metrics import METRICS, TURN_TABLE
from voicetrace.traces.files import read_trace_files

DATA = Path(__file__).resolve().parents[1] / "data"


def test_jaeger_trace_json_matches_the_otlp_source():
    ours = build_report(read_trace_files([DATA / "jaeger_source.jsonl"])).turns
    jaeger = build_report(read_trace_files([DATA / "jaeger_trace.json"])).turns
    assert len(ours) == len(jaeger) == 2
    for col in [METRICS[k].column for k in TURN_TABLE] + ["bd_tools_ms", "bd_llm_prefill_ms", "bd_unattributed_ms", "itl_p50_ms"]:
        assert np.allclose(ours[col], jaeger[col], atol=1e-3, equal_nan=True), col
    assert list(jaeger["transcript"]) == ["jaeger one", "jaeger two"]


def test_pipecat_spans_are_mapped_onto_ours():
    turns = build_report(read_trace_files([DATA / "pipecat_trace.jsonl"])).turns
    assert list(turns["turn"]) == [1, 2]
    row = turns.iloc[0]
    assert row["transcript"] == "hello 1" and row["language"] == "en"
    assert row["ttft_ms"] == pytest.approx(250)  # llm start + metrics.ttfb (seconds)
    assert row["tts_ttfb_ms"] == pytest.approx(150)
    assert row["first_sentence_ms"] == pytest.approx(2300 - (1950 + 250))
    assert math.isnan(row["v2v_ms"]) and math.isnan(row["endpointing_ms"])  # no speech/playback spans: missing
    assert row["reported_user_bot_ms"] == pytest.approx(1250)
    assert row["input_tokens"] == 81


def test_pretty_printed_single_request_and_collector_lines(tmp_path):
    lines = (DATA / "jaeger_source.jsonl").read_bytes().splitlines()
    pretty = tmp_path / "one.json"
    pretty.write_bytes(orjson.dumps(orjson.loads(lines[0]), option=orjson.OPT_INDENT_2))
    v3 = tmp_path / "v3.json"
    v3.write_bytes(orjson.dumps({"result": orjson.loads(lines[0])}, option=orjson.OPT_INDENT_2))
    reference = build_report(read_trace_files([DATA / "jaeger_source.jsonl"])).turns
    for path in (pretty, v3):
        turns = build_report(read_trace_files([path])).turns
        assert np.allclose(reference["v2v_ms"], turns["v2v_ms"]), path.name


def test_run_folder_and_several_inputs(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trace.jsonl").write_bytes((DATA / "jaeger_source.jsonl").read_bytes())
    report = build_report(read_trace_files([run, DATA / "pipecat_trace.jsonl"]))
    assert report.summary.calls == 2 and report.summary.turns == 4


def test_real_run_trace_breakdown_and_definitions():
    """A trace recorded by `voicetrace run` (claim_status, content captured, llama.cpp timings, tools)."""
    from voicetrace import semconv as sc
    from voicetrace.analysis.metrics import SEGMENTS

    tables = read_trace_files([DATA / "claim_status_trace.jsonl"])
    report = build_report(read_trace_files([DATA / "claim_status_trace.jsonl"]))
    turns = report.turns
    spans = tables.spans
    assert len(turns) == 4
    for row in turns.itertuples():
        kids = spans[spans["parent_span_id"] == row.turn_span_id].set_index("name")
        # V2V straight from the spans, the DESIGN.md way: bot audio start − caller speech end.
        v2v_ns = int(kids.loc[sc.SPAN_BOT_SPEECH, "start_ns"]) - int(kids.loc[sc.SPAN_USER_SPEECH, "end_ns"])
        assert row.v2v_ms == pytest.approx(v2v_ns / 1e6, abs=1e-6)
        parts = [getattr(row, f"bd_{s}_ms") for s in SEGMENTS]
        assert np.nansum(parts) == pytest.approx(v2v_ns / 1e6, abs=1e-6)
        assert row.bd_llm_prefill_ms > 0  # llama.cpp prefill sits inside TTFT
    assert turns["prompt_tokens"].notna().all() and turns["prompt_tokens"].is_monotonic_increasing
    assert report.summary.get("itl").n > 50
