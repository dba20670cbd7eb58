"""The breakdown's unattributed time split into loop lag, queue waits and the rest, on synthetic spans
whose blocks and waits are placed by hand."""

from __future__ import annotations

import io

import numpy as np
import orjson

from voicetrace import semconv as sc
from voicetrace.analysis.metrics import SEGMENTS
from voicetrace.render import renderer
from voicetrace.report import build_report
from voicetrace.traces.files import read_trace_files

from tests.report.synth import Turn, _span, call_spans, write_trace


def _monitored_call(extra):
    # Turn: speech end 1000, decided 1300, transcript 1700 (ready), LLM request 1900: 200 ms unattributed.
    spans = call_spans([Turn(at=1000, gap=200)])
    conv = spans[0]
    conv["attributes"].append({"key": sc.ATTR_LOOP_INTERVAL_MS, "value": {"doubleValue": 10.0}})
    trace, parent = conv["traceId"], conv["spanId"]
    for name, start, end, attrs in extra:
        spans.append(_span(trace, parent, name, start, end, attrs))
    return spans


def _report(tmp_path, spans):
    return build_report(read_trace_files([write_trace(tmp_path / "t.jsonl", [spans])]))


def test_blocks_and_waits_inside_the_unattributed_window_leave_unattributed(tmp_path):
    r = _report(tmp_path, _monitored_call([
        (sc.SPAN_LOOP_BLOCKED, 1750, 1830, {sc.ATTR_LOOP_PROCESSOR: "Blocker#0"}),
        (sc.SPAN_LOOP_BLOCKED, 1950, 2000, {sc.ATTR_LOOP_PROCESSOR: "Other#0"}),  # inside TTFT: not unattributed
        (sc.SPAN_QUEUE_WAIT, 1800, 1880, {sc.ATTR_QUEUE_PROCESSOR: "LLM#0"}),  # 1800-1830 already loop lag
        (sc.SPAN_QUEUE_WAIT, 1600, 1720, {sc.ATTR_QUEUE_PROCESSOR: "STT#0"}),  # only 1700-1720 is unattributed
    ]))
    row = r.turns.iloc[0]
    assert row["bd_loop_lag_ms"] == 80
    assert row["bd_queue_wait_ms"] == 70 and row["queue_waits_ms"] == {"LLM#0": 50.0, "STT#0": 20.0}
    assert row["bd_unattributed_ms"] == 200 - 80 - 70
    assert (row["loop_blocker"], row["loop_blocked_ms"]) == ("Blocker#0", 80)
    total = np.nansum([row[f"bd_{s}_ms"] for s in SEGMENTS])
    assert abs(total - row["v2v_ms"]) < 1e-6


def test_a_monitored_call_without_blocks_shows_zero_and_an_old_trace_shows_nothing(tmp_path):
    quiet = _report(tmp_path, _monitored_call([])).turns.iloc[0]
    assert quiet["bd_loop_lag_ms"] == 0 and quiet["bd_queue_wait_ms"] == 0 and quiet["bd_unattributed_ms"] == 200
    old = build_report(read_trace_files([write_trace(tmp_path / "old.jsonl", [call_spans([Turn(at=1000, gap=200)])])]))
    row = old.turns.iloc[0]
    assert np.isnan(row["bd_loop_lag_ms"]) and row["bd_unattributed_ms"] == 200
    out = io.StringIO()
    renderer("json")(old, out)
    (turn,) = orjson.loads(out.getvalue())["turns"]
    assert "loop_lag" not in turn["breakdown_ms"] and "loop_blocker" not in turn


def test_the_json_and_terminal_name_the_processor_that_blocked_the_loop(tmp_path):
    r = _report(tmp_path, _monitored_call([(sc.SPAN_LOOP_BLOCKED, 1750, 1830, {sc.ATTR_LOOP_PROCESSOR: "Blocker#0"})]))
    out = io.StringIO()
    renderer("json")(r, out)
    (turn,) = orjson.loads(out.getvalue())["turns"]
    assert turn["breakdown_ms"]["loop_lag"] == 80 and turn["loop_blocker"] == "Blocker#0"
    text = io.StringIO()
    renderer("terminal")(r, text)
    assert "event loop blocked 80 ms by Blocker#0" in text.getvalue()
    page = io.StringIO()
    renderer("html")(r, page)
    assert "event loop blocked 80 ms by Blocker#0" in page.getvalue()
