"""One report pipeline for every source: Jaeger's answers give the same turns as the file (pipecat's
own spans included), the table `run` prints is the report's, the acoustic step returns new data."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import httpx
import numpy as np
import orjson
import pandas as pd
import pytest
from rich.console import Console

from voicetrace import semconv as sc
from voicetrace.analysis.metrics import METRICS, TURN_TABLE
from voicetrace.report import build_report
from voicetrace.traces.files import read_trace_files
from voicetrace.traces.jaeger import API_LEGACY, API_V3, read_jaeger
from voicetrace.traces.normalise import NORMALISERS, normalise

from tests.report.jaeger_legacy import to_jaeger

DATA = Path(__file__).resolve().parents[1] / "data"
PIPECAT = DATA / "pipecat_trace.jsonl"
JAEGER = "http://jaeger.test:16686"
COMPARED = [METRICS[k].column for k in TURN_TABLE] + ["transcript", "language", "reported_user_bot_ms", "input_tokens", "turn", "conversation"]


def _pipecat_request() -> dict:
    """Every export request of pipecat's own trace as one request (what Jaeger's api/v3 answers)."""
    lines = [orjson.loads(line) for line in PIPECAT.read_bytes().splitlines() if line.strip()]
    return {"resourceSpans": [rs for doc in lines for rs in doc["resourceSpans"]]}


def _raw(name: str) -> list[dict]:
    """pipecat's raw spans of one name, in time order, attributes as a plain dict."""
    spans = [s for rs in _pipecat_request()["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
             if s["name"] == name]
    for s in spans:
        s["attrs"] = {kv["key"]: next(iter(kv["value"].values())) for kv in s.get("attributes", [])}
    return sorted(spans, key=lambda s: int(s["startTimeUnixNano"]))


def _jaeger_transport(api: str, service: str, request: dict) -> httpx.MockTransport:
    """Answers like Jaeger's query service: api/v3 (OTLP JSON under "result", what Jaeger 2 serves) or the
    legacy UI JSON (/api/traces: µs times, typed tags; api/v3 absent, as on Jaeger 1.x before v3)."""
    spans = [s for rs in request["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    trace_id = spans[0]["traceId"]

    def answer(req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if api == API_V3:
            if path == "/api/v3/services":
                return httpx.Response(200, json={"services": [service]})
            if path in ("/api/v3/traces", f"/api/v3/traces/{trace_id}"):
                return httpx.Response(200, json={"result": request})
        else:
            if path == "/api/services":
                return httpx.Response(200, json={"data": [service], "total": 1})
            if path in ("/api/traces", f"/api/traces/{trace_id}"):
                return httpx.Response(200, json=to_jaeger(spans))
        return httpx.Response(404, json={"error": {"code": 404, "message": "not found"}})

    return httpx.MockTransport(answer)


@pytest.mark.parametrize("api", [API_V3, API_LEGACY])
@pytest.mark.parametrize("by", ["service", "trace_id"])
def test_jaeger_on_pipecat_spans_gives_the_turns_of_the_file_report(api, by):
    request = _pipecat_request()
    trace_id = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    query = {"service": "pipecat-agent"} if by == "service" else {"trace_ids": [trace_id]}
    tables = read_jaeger(JAEGER, api=api, transport=_jaeger_transport(api, "pipecat-agent", request), **query)
    stt, llm, tts = _raw("stt"), _raw("llm"), _raw("tts")
    assert (tables.spans["name"] == "stt").sum() == len(stt) == 4  # read raw: the pipeline maps them

    from_jaeger = build_report(tables, sources=[JAEGER]).turns
    from_file = build_report(read_trace_files([PIPECAT])).turns
    assert list(from_jaeger["transcript"]) == [s["attrs"]["transcript"] for s in stt]  # stt → asr
    # llm / tts start + metrics.ttfb (seconds): the mapping the Jaeger path used to skip
    assert list(from_jaeger["ttft_ms"]) == pytest.approx([s["attrs"]["metrics.ttfb"] * 1000 for s in llm], abs=0.002)
    assert list(from_jaeger["tts_ttfb_ms"]) == pytest.approx([s["attrs"]["metrics.ttfb"] * 1000 for s in tts], abs=0.002)
    pd.testing.assert_frame_equal(from_jaeger[COMPARED], from_file[COMPARED], check_exact=False, atol=1e-3)


def test_the_pipeline_runs_every_normaliser_on_every_source():
    """Without the pipecat normaliser the same spans lose ASR and TTFT: what `report --jaeger` did before."""
    tables = read_trace_files([PIPECAT])
    raw = build_report(tables, normalisers=[n for n in NORMALISERS if n.name != "pipecat"]).turns
    assert raw["ttft_ms"].isna().all() and raw["transcript"].isna().all()
    assert {n.name for n in NORMALISERS} >= {"pipecat", "server_spans"}


def test_normalisers_return_new_tables_and_are_idempotent():
    tables = read_trace_files([PIPECAT])
    before = tables.spans.copy(deep=True)
    once = normalise(tables)
    pd.testing.assert_frame_equal(tables.spans, before)  # the input is not changed
    twice = normalise(once)
    assert list(twice.spans["name"]) == list(once.spans["name"]) and len(twice.events) == len(once.events)
    assert (once.spans["name"] == sc.SPAN_ASR).sum() == len(_raw("stt")) and "server_skew" in once.notes


def _run_folder(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(DATA / "claim_status_trace.jsonl", run / "trace.jsonl")  # a real run's trace: 4 turns
    return run


def _v2v_row(text: str) -> str:
    """The V2V row of the headline table (metric, n, p50, p90, p95, p99, max)."""
    rows = [line for line in text.splitlines() if re.match(r"^│V2V\s", line)]
    assert len(rows) == 1, f"no headline V2V row in:\n{text}"
    return rows[0]


def test_the_table_run_prints_is_the_reports(tmp_path, monkeypatch):
    """`run` ends with print_run_report(folder): the report's percentile rule, p95 of 4 turns is 'n=4 <20'."""
    from voicetrace.cli.inputs import build
    from voicetrace.cli.report import print_run_report, report_command

    run = _run_folder(tmp_path)
    after_run, err = io.StringIO(), io.StringIO()
    print_run_report(run, Console(file=after_run, width=140), Console(file=err, width=140))
    text = after_run.getvalue()
    cells = [c.strip() for c in _v2v_row(text).strip("│").split("│")]
    assert cells[1:6] == ["4", "1,713", "n=4 <10", "n=4 <20", "n=4 <100"]  # n, p50, p90, p95, p99
    assert "≈max" not in text

    report = io.StringIO()
    report_command(build([run]), Console(file=report, width=140), Console(file=io.StringIO()))
    assert text == report.getvalue()  # the same as `voicetrace report RUN_FOLDER`


def test_the_acoustic_step_returns_a_new_report(tmp_path):
    from tests.unit.test_acoustic import AGENT, CALLER, build, dur
    from voicetrace.acoustic.runs import analyze_recording, join_acoustic
    from voicetrace.acoustic.trace import write_trace

    run = tmp_path / "run"
    run.mkdir()
    wav = build(run / "call.wav", [(0, 1.0, CALLER[0], None), (1, 1.0 + dur(CALLER[0]) + 0.6, AGENT[0], None)])
    write_trace(analyze_recording(wav), run / "trace.jsonl", t0_ns=1_700_000_000_000_000_000)

    events_only = build_report(read_trace_files([run]), steps=())
    columns = list(events_only.turns.columns)
    joined = join_acoustic(events_only)
    assert list(events_only.turns.columns) == columns and events_only.acoustic is None  # not changed in place
    assert joined is not events_only and joined.acoustic is not None
    assert np.allclose(joined.turns["acoustic_v2v_ms"], joined.turns["v2v_ms"], atol=10)
    assert "acoustic_v2v_ms" in build_report(read_trace_files([run])).turns  # a step of the default pipeline
