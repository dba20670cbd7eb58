"""TTFT on the wire and the delivery lag reach the report from the first-token llm span's attributes."""

from __future__ import annotations

import io

import orjson

from voicetrace import semconv as sc
from voicetrace.render import renderer
from voicetrace.report import build_report
from voicetrace.traces.files import read_trace_files

from tests.report.synth import Turn, call_spans, write_trace


def test_wire_ttft_and_delivery_lag_are_in_the_json_and_the_terminal(tmp_path):
    spans = call_spans([Turn(at=1000, ttft=180), Turn(at=9000, ttft=220)])
    for llm, (wire, lag) in zip([s for s in spans if s["name"] == sc.SPAN_LLM], ((171.5, 8.0), (209.0, 10.5))):
        llm["attributes"] += [{"key": sc.ATTR_LLM_TTFT_WIRE_MS, "value": {"doubleValue": wire}},
                              {"key": sc.ATTR_LLM_DELIVERY_LAG_MS, "value": {"doubleValue": lag}}]
    report = build_report(read_trace_files([write_trace(tmp_path / "t.jsonl", [spans])]))
    out = io.StringIO()
    renderer("json")(report, out)
    turns = orjson.loads(out.getvalue())["turns"]
    assert [(t["ttft_ms"], t["ttft_wire_ms"], t["llm_delivery_lag_ms"]) for t in turns] == [
        (180.0, 171.5, 8.0), (220.0, 209.0, 10.5)]
    text = io.StringIO()
    renderer("terminal")(report, text)
    assert "TTFT on the wire: p50 190 ms over 2 turn(s) (delivered: p50 200)" in text.getvalue()
    assert "delivery lag socket → pipecat p50 9.2 ms, max 10.5 ms" in text.getvalue()
    page = io.StringIO()
    renderer("html")(report, page)
    assert "TTFT on the wire: p50 190 ms over 2 turn(s)" in page.getvalue()
