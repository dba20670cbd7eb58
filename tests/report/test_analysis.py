"""Analysis functions on synthetic spans whose milestones are placed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voicetrace.analysis.metrics import SEGMENTS
from voicetrace.analysis.budgets import BudgetError, check, parse
from voicetrace.analysis.diff import diff
from voicetrace.analysis.kvcache import ModelShape, parse_shape
from voicetrace.report import build_report
from voicetrace.analysis.whatif import whatif
from voicetrace.traces.files import read_trace_files

from tests.report.synth import Turn, call_spans, many_calls, write_trace


def report_for(tmp_path, turns, name="t.jsonl", **kwargs):
    path = write_trace(tmp_path / name, [call_spans(turns)])
    return build_report(read_trace_files([path]), **kwargs)


def seg_ms(row):
    return {s: row[f"bd_{s}_ms"] for s in SEGMENTS}


def test_breakdown_segments_sum_exactly_to_v2v(tmp_path):
    turns = [Turn(at=1000.123, endpoint=311.7, asr_final=402.9, gap=3.3, ttft=181.1, first_sentence=33.3,
                  tts_ttfb=171.7, transport=9.9),
             Turn(at=9000, queue=20, prefill=60, tool=50, ttft=300),
             Turn(at=19000, asr_final=-150)]  # ASR done before the turn was decided
    r = report_for(tmp_path, turns)
    t = r.turns
    bd_ns = np.nansum(np.vstack([t[f"bd_{s}_ms"].to_numpy() * 1e6 for s in SEGMENTS]), axis=0)
    exact_ns = (t["bot_start_ns"] - t["user_end_ns"]).to_numpy(dtype="float64")
    assert np.abs(bd_ns - exact_ns).max() < 1e-3  # ns: the only error is the ms division/multiplication

    first = seg_ms(t.iloc[0])
    assert first["endpointing"] == pytest.approx(311.7, abs=1e-6)
    assert first["asr_final"] == pytest.approx(402.9, abs=1e-6)
    assert first["llm_ttft"] == pytest.approx(181.1, abs=1e-6)
    assert first["unattributed"] == pytest.approx(3.3, abs=1e-6)  # ready → LLM request
    assert math.isnan(first["llm_prefill"]) and math.isnan(first["tools"])  # not known: missing, not 0
    assert t.iloc[0]["v2v_ms"] == pytest.approx(311.7 + 402.9 + 3.3 + 181.1 + 33.3 + 171.7 + 9.9, abs=1e-6)

    second = seg_ms(t.iloc[1])
    assert second["tools"] == pytest.approx(50)
    assert second["llm_queue"] == pytest.approx(20)
    assert second["llm_prefill"] == pytest.approx(60)
    assert second["llm_ttft"] == pytest.approx(300 - 50 - 20 - 60)

    third = seg_ms(t.iloc[2])
    assert third["asr_final"] == 0  # off the critical path
    assert t.iloc[2]["asr_final_ms"] == 0  # DESIGN: max(0, asr end − turn decided)


def test_v2v_ends_where_the_bot_is_audible_and_the_lead_in_is_its_own_segment(tmp_path):
    """voice.bot.audible on bot.speech: V2V runs to it and the TTS's near-silent lead-in is a segment;
    a turn without the event (older traces) keeps V2V at the first frame played and no such segment."""
    report = report_for(tmp_path, [Turn(at=5_000, leading_silence=37.5), Turn(at=25_000)])
    audible, old = report.turns.iloc[0], report.turns.iloc[1]
    plain = 300 + 400 + 2 + 180 + 30 + 170 + 10
    assert audible["v2v_ms"] == pytest.approx(plain + 37.5, abs=1e-3)
    assert audible["bd_tts_leading_silence_ms"] == pytest.approx(37.5, abs=1e-3)
    assert np.nansum(list(seg_ms(audible).values())) == pytest.approx(audible["v2v_ms"], abs=1e-6)
    assert old["v2v_ms"] == pytest.approx(plain, abs=1e-3) and math.isnan(old["bd_tts_leading_silence_ms"])
    assert np.nansum(list(seg_ms(old).values())) == pytest.approx(old["v2v_ms"], abs=1e-6)


def test_a_tool_between_transcript_and_llm_request_leaves_unattributed(tmp_path):
    from tests.report.synth import MS, T0, call_spans, write_trace

    spans = call_spans([Turn(at=1000, gap=40)])
    turn = next(s for s in spans if s["name"] == "turn")
    ready_ms = 1000 + 300 + 400
    tool = dict(turn, spanId="00000000000000aa", name="tool.get_claim_status", attributes=[], events=[],
                startTimeUnixNano=str(T0 + (ready_ms + 10) * MS), endTimeUnixNano=str(T0 + (ready_ms + 35) * MS),
                parentSpanId=turn["spanId"])
    r = build_report(read_trace_files([write_trace(tmp_path / "t.jsonl", [spans + [tool]])]))
    row = r.turns.iloc[0]
    assert row["bd_tools_ms"] == pytest.approx(25, abs=1e-6)
    assert row["bd_unattributed_ms"] == pytest.approx(40 - 25, abs=1e-6)
    assert np.nansum([row[f"bd_{s}_ms"] for s in SEGMENTS]) == pytest.approx(row["v2v_ms"], abs=1e-6)


def test_missing_stage_is_missing_and_its_time_goes_to_unattributed(tmp_path):
    r = report_for(tmp_path, [Turn(at=1000, tts_ttfb=170, transport=10, missing={"tts"})])
    row = r.turns.iloc[0]
    assert math.isnan(row["tts_ttfb_ms"]) and math.isnan(row["first_sentence_ms"])
    assert math.isnan(row["bd_tts_ttfb_ms"]) and math.isnan(row["bd_first_sentence_ms"])
    total = np.nansum([row[f"bd_{s}_ms"] for s in SEGMENTS])
    assert total == pytest.approx(row["v2v_ms"], abs=1e-6)
    assert row["bd_unattributed_ms"] == pytest.approx(2 + 30 + 170 + 10, abs=1e-6)


def test_itl_splits_multi_token_chunks(tmp_path):
    r = report_for(tmp_path, [Turn(at=1000, itl=10, chunk_tokens=[1, 1, 3, 1])])
    gaps = sorted(r.gaps["gap_ms"].round(6))
    # chunk times: +0, +10, +40 (3 tokens → three gaps of 10), +50
    assert gaps == [10.0] * 5
    assert r.gaps["split"].sum() == 3
    assert r.turns.iloc[0]["tpot_ms"] == pytest.approx(50 / (6 - 1))


def test_few_turns_say_how_many_instead_of_a_p99(tmp_path):
    r = report_for(tmp_path, [Turn(at=1000 + 8000 * i, ttft=100 + i) for i in range(5)])
    v2v = r.summary.get("v2v")
    assert v2v.n == 5
    assert v2v.value("p50") is not None and v2v.value("p99") is None
    d = v2v.to_dict()
    assert d["p99"] is None and d["n"] == 5 and "p99 needs ≥100" in d["note"]


def test_goodput_and_languages(tmp_path):
    turns = [Turn(at=1000, ttft=100, language="en"), Turn(at=9000, ttft=5000, language="de"),
             Turn(at=20000, ttft=100, language="en")]
    r = report_for(tmp_path, turns, budget_ms=1500)
    assert r.summary.goodput == pytest.approx(2 / 3)
    assert r.summary.languages["en"]["turns"] == 2 and r.summary.languages["de"]["turns"] == 1


def test_kv_cache_bytes_from_prompt_tokens_and_shape(tmp_path):
    shape = parse_shape("30,3,64")
    assert shape.bytes_per_token == 2 * 30 * 3 * 64 * 2
    r = report_for(tmp_path, [Turn(at=1000, input_tokens=200, tokens=10), Turn(at=9000, prefill=40)],
                   model_shape=shape)
    t = r.turns
    assert t.iloc[0]["prompt_tokens"] == 200
    assert t.iloc[0]["kv_cache_bytes"] == (200 + 10) * shape.bytes_per_token
    assert t.iloc[1]["prompt_tokens"] == 60  # server prefill: prompt_n 50 + cache_n 10
    with pytest.raises(ValueError):
        parse_shape("30,3")


def test_whatif_gains_only_on_the_critical_path(tmp_path):
    turns = [Turn(at=1000, endpoint=300, asr_final=400), Turn(at=9000, endpoint=300, asr_final=-200),
             Turn(at=19000, endpoint=300, asr_final=50)]
    t = report_for(tmp_path, turns).turns
    asr = whatif(t, "asr", 100)
    assert list(asr["gain_ms"].round(6)) == [100, 0, 50]  # off path: nothing; partly: up to endpointing
    ep = whatif(t, "endpointing", 100)
    assert list(ep["gain_ms"].round(6)) == [0, 100, 0]
    tts = whatif(t, "tts", 100)
    assert list(tts["gain_ms"].round(6)) == [100, 100, 100]
    assert (tts["new_v2v_ms"] == tts["v2v_ms"] - 100).all()
    assert list(whatif(t, "tts", 1000)["gain_ms"].round(6)) == [170, 170, 170]  # at most what it owned
    with pytest.raises(ValueError):
        whatif(t, "nope", 1)


def test_budgets_parse_and_check(tmp_path):
    r = report_for(tmp_path, [Turn(at=1000 + 8000 * i, ttft=100) for i in range(3)])
    budgets, v2v_budget = parse({"v2v": {"p95": 500}, "ttft": {"p50": 300}, "goodput": 0.9, "v2v_budget_ms": 800})
    assert v2v_budget == 800
    results = {str(x.budget): x for x in check(r.summary, budgets)}
    assert not results["v2v.p95 <= 500"].ok  # 3 turns: the maximum is checked
    assert "maximum" in results["v2v.p95 <= 500"].note
    assert results["ttft.p50 <= 300"].ok
    for bad in ({"v2v": {"p42": 1}}, {"nope": {"p50": 1}}, {"goodput": 2}, {"v2v": 5}, {}):
        with pytest.raises(BudgetError):
            parse(bad)


def test_diff_marks_better_and_worse(tmp_path):
    a = report_for(tmp_path, [Turn(at=1000 + 8000 * i, ttft=400, tts_ttfb=100) for i in range(3)], name="a.jsonl")
    b = report_for(tmp_path, [Turn(at=1000 + 8000 * i, ttft=200, tts_ttfb=300) for i in range(3)], name="b.jsonl")
    rows = diff(a.summary, b.summary).set_index(["metric", "stat"])
    assert rows.loc[("ttft", "p50"), "verdict"] == "better"
    assert rows.loc[("ttft", "p50"), "change"] == pytest.approx(-200)
    assert rows.loc[("tts_ttfb", "p50"), "verdict"] == "worse"
    assert rows.loc[("v2v", "p50"), "verdict"] == "same"


def test_many_calls_are_counted(tmp_path):
    path = write_trace(tmp_path / "many.jsonl", many_calls(12, 5))
    r = build_report(read_trace_files([path]))
    assert r.summary.calls == 12 and r.summary.turns == 60
    assert r.summary.get("itl").n == len(r.gaps) > 0


def test_unknown_spans_are_kept_and_grouped(tmp_path):
    spans = call_spans([Turn(at=1000)])
    extra = dict(spans[0], spanId="ffff000000000001", parentSpanId="", name="http.get", attributes=[])
    extra2 = dict(extra, spanId="ffff000000000002")
    path = write_trace(tmp_path / "t.jsonl", [spans + [extra, extra2]])
    r = build_report(read_trace_files([path]))
    assert r.other.set_index("name").loc["http.get", "count"] == 2
