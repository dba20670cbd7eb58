"""Every trace input the report accepts gives the same turns table."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import orjson
import pytest

from voicetrace.report import build_report
from voicetrace.analysis.metrics import METRICS, TURN_TABLE
from voicetrace.traces.files import read_trace_files

from tests.conftest import VOICETRACE

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("name", ["jaeger_trace.json", "jaeger_trace.v3.json"])
def test_jaeger_trace_json_matches_the_otlp_source(name):
    """jaeger_source.jsonl's spans as a real Jaeger returns them (tests/data/make_jaeger_trace.py): the
    legacy /api/traces JSON and api/v3, each one line, exactly as the API answered."""
    raw = (DATA / name).read_bytes()
    assert len(raw.strip().splitlines()) == 1  # compact, as served: not a pretty-printed copy
    ours = build_report(read_trace_files([DATA / "jaeger_source.jsonl"])).turns
    jaeger = build_report(read_trace_files([DATA / name])).turns
    assert len(ours) == len(jaeger) == 2
    for col in [METRICS[k].column for k in TURN_TABLE] + ["bd_tools_ms", "bd_llm_prefill_ms", "bd_unattributed_ms", "itl_p50_ms"]:
        assert np.allclose(ours[col], jaeger[col], atol=1e-3, equal_nan=True), col
    assert list(jaeger["transcript"]) == ["jaeger one", "jaeger two"]


def _pipecat_turns(path: Path) -> list[dict]:
    """pipecat's turn spans with their stt/llm/tts children, read straight from the OTLP JSON."""
    def plain(attrs):
        return {kv["key"]: next(iter(kv["value"].values())) for kv in attrs}

    spans = [dict(s, attrs=plain(s.get("attributes", []))) for line in path.read_bytes().splitlines()
             for r in orjson.loads(line)["resourceSpans"] for sc_ in r["scopeSpans"] for s in sc_["spans"]]
    conversation = next(s for s in spans if s["name"] == "conversation")
    turns = []
    for turn in sorted((s for s in spans if s["name"] == "turn"), key=lambda s: int(s["attrs"]["turn.number"])):
        kids = sorted((s for s in spans if s.get("parentSpanId") == turn["spanId"]), key=lambda s: int(s["startTimeUnixNano"]))
        turns.append({"turn": turn, "conversation": conversation,
                      **{name: next(k for k in kids if k["name"] == name) for name in ("stt", "llm", "tts")}})
    return turns


def test_pipecat_spans_are_mapped_onto_ours(cli_env):
    """tests/data/pipecat_trace.jsonl is pipecat's own tracing of a real call (pipelines/make_pipecat_trace.py).
    Every expected value is read from its raw spans: metrics.ttfb (seconds) → TTFT and TTS TTFB, the
    first sentence from LLM first token to TTS start, pipecat's own user→bot latency, the token counts."""
    path = DATA / "pipecat_trace.jsonl"
    expected = _pipecat_turns(path)
    assert len(expected) == 4  # claim_status: four caller lines
    done = subprocess.run([str(VOICETRACE), "report", str(path), "--json"], capture_output=True, text=True,
                          timeout=120, env=cli_env)
    assert done.returncode == 0, done.stderr
    turns = orjson.loads(done.stdout)["turns"]
    assert [t["turn"] for t in turns] == [int(e["turn"]["attrs"]["turn.number"]) for e in expected]
    ms = pytest.approx
    for got, e in zip(turns, expected):
        stt, llm, tts, turn = e["stt"]["attrs"], e["llm"], e["tts"], e["turn"]["attrs"]
        first_token_ns = int(llm["startTimeUnixNano"]) + llm["attrs"]["metrics.ttfb"] * 1e9
        assert got["conversation"] == e["conversation"]["attrs"]["conversation.id"]
        assert got["transcript"] == stt["transcript"] and got["language"] == stt["language"]
        assert got["llm_output"] == llm["attrs"]["output"]
        assert got["ttft_ms"] == ms(llm["attrs"]["metrics.ttfb"] * 1000, abs=0.002)
        assert got["tts_ttfb_ms"] == ms(tts["attrs"]["metrics.ttfb"] * 1000, abs=0.002)
        assert got["first_sentence_ms"] == ms((int(tts["startTimeUnixNano"]) - first_token_ns) / 1e6, abs=0.002)
        assert got["llm_e2e_ms"] == ms((int(llm["endTimeUnixNano"]) - int(llm["startTimeUnixNano"])) / 1e6, abs=0.002)
        assert got["reported_user_bot_ms"] == ms(turn["turn.user_bot_latency_seconds"] * 1000, abs=0.002)
        assert got["prompt_tokens"] == int(llm["attrs"]["gen_ai.usage.input_tokens"])
        assert got["output_tokens"] == int(llm["attrs"]["gen_ai.usage.output_tokens"])
        assert got["interrupted"] == turn["turn.was_interrupted"]
        # pipecat has no speech, endpointing or playback spans: those stay missing, never zero.
        assert got["v2v_ms"] is None and got["endpointing_ms"] is None and got["asr_final_ms"] is None


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
    assert report.summary.calls == 2 and report.summary.turns == 2 + len(_pipecat_turns(DATA / "pipecat_trace.jsonl"))


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
