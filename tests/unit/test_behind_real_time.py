"""A call that falls behind real time says so: the signs (input fed late, loop blocked, audio played
late) mark the turns they overlap, the conversation and the report, and a negative V2V is never
printed as a number. Times placed by hand on a fake clock."""

from __future__ import annotations

import io

import orjson
import pytest
from pipecat.frames.frames import EndFrame, StartFrame

from voicetrace import semconv as sc
from voicetrace.capture.realtime import RealTimeCheck
from voicetrace.render import renderer
from voicetrace.report import build_report
from voicetrace.traces.files import read_trace_files

from tests.report.synth import Turn, call_spans, write_trace
from tests.unit.test_observer import Harness, play_turn

MS = 1_000_000


def test_late_input_frames_merge_and_small_lateness_is_not_behind():
    check = RealTimeCheck()
    for n in range(100):  # frames 0-99 on time (a few ms of jitter)
        check.input_late(n * 20 * MS, n * 20 * MS + 3 * MS)
    assert not check.behind
    for n in range(100, 110):  # the feeder stalls: frames 100-109 each fed 150 ms late
        check.input_late(n * 20 * MS, n * 20 * MS + 150 * MS)
    check.playback_late(5000 * MS, 5010 * MS)  # 10 ms: within tolerance
    assert check.behind
    assert check.reasons_between(1990 * MS, 2100 * MS) == ["input_late"]
    assert check.reasons_between(0, 1900 * MS) == []
    s = check.summary()
    assert s["input_late"] == {"count": 10, "worst_ms": 150.0, "threshold_ms": 40.0}
    assert s["playback_late"]["count"] == 0


@pytest.mark.asyncio
async def test_turns_overlapping_a_sign_are_marked_and_the_others_are_not():
    h = Harness()
    await h.push(0, StartFrame())
    await play_turn(h, 800)  # turn 1: 800-5800 ms, on time
    h.observer.realtime.input_late(10_000 * MS, 10_300 * MS)  # 300 ms late in turn 2's speech
    h.observer.realtime.playback_late(12_000 * MS, 12_090 * MS)
    await play_turn(h, 9000)
    await h.push(20_000, EndFrame())
    first, second = sorted(h.spans(sc.SPAN_TURN), key=lambda s: s.start_time)
    assert sc.ATTR_BEHIND_REAL_TIME not in first.attributes
    assert second.attributes[sc.ATTR_BEHIND_REAL_TIME] is True
    assert list(second.attributes[sc.ATTR_BEHIND_REASONS]) == ["input_late", "playback_late"]
    conv = h.one(sc.SPAN_CONVERSATION).attributes
    assert conv[sc.ATTR_BEHIND_REAL_TIME] is True
    assert (conv[sc.ATTR_INPUT_LATE_MAX_MS], conv[sc.ATTR_PLAYBACK_LATE_MAX_MS]) == (300.0, 90.0)


def _marked_trace(tmp_path):
    # Turn 2 answered "before" the caller finished: V2V −420 ms, which no real call can have.
    spans = call_spans([Turn(at=1000), Turn(at=9000, endpoint=-500, asr_final=-400, gap=0, ttft=50,
                                            first_sentence=10, tts_ttfb=10, transport=10)])
    turn2 = [s for s in spans if s["name"] == sc.SPAN_TURN][1]
    turn2["attributes"] += [{"key": sc.ATTR_BEHIND_REAL_TIME, "value": {"boolValue": True}},
                            {"key": sc.ATTR_BEHIND_REASONS, "value": {"arrayValue": {"values": [
                                {"stringValue": "input_late"}]}}}]
    return build_report(read_trace_files([write_trace(tmp_path / "t.jsonl", [spans])]))


def test_the_report_marks_the_turn_and_never_prints_a_negative_v2v(tmp_path):
    report = _marked_trace(tmp_path)
    out = io.StringIO()
    renderer("json")(report, out)
    doc = orjson.loads(out.getvalue())
    first, second = doc["turns"]
    assert first["behind_real_time"] is None and first["impossible"] is None
    assert second["behind_real_time"] == ["input_late"]
    assert second["v2v_ms"] is None and second["impossible"] == ["v2v_ms"]
    assert doc["summary"]["metrics_ms"]["v2v"]["n"] == 1  # the impossible value is in no percentile
    text = io.StringIO()
    renderer("terminal")(report, text)
    table = text.getvalue()
    assert "turn 2 ran behind real time (input late)" in table
    row = next(line for line in table.splitlines() if line.startswith("│") and "2⏱" in line)
    assert "<0!" in row and "-420" not in row and "−420" not in row
    html = io.StringIO()
    renderer("html")(report, html)
    assert 'title="ran behind real time: input late"' in html.getvalue() and "&lt;0!" in html.getvalue()
