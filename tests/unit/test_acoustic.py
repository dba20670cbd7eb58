"""voicetrace.acoustic and `voicetrace analyze`: recordings built here with real speech (lines cut from the
sample calls) placed at exact offsets on two channels, so every gap and overlap is known."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import soxr

from voicetrace.acoustic.check import compare_turns, disagreements
from voicetrace.acoustic.conversation import analyze_segments
from voicetrace.acoustic.levels import frame_levels, recording_info
from voicetrace.audio.file import AudioInputError
from voicetrace.acoustic.runs import analyze_recording
from voicetrace.acoustic.trace import write_trace
from voicetrace.acoustic.vad import speech_segments
from voicetrace.analysis.turns import turn_metrics
from voicetrace.traces.files import read_trace_files

from tests.conftest import SAMPLES, VOICETRACE

TOL_MS = 20.0


def _lines(call: str) -> list[np.ndarray]:
    """The caller lines of a sample call, cut at the measured speech start/end (float32, 16 kHz)."""
    audio, rate = sf.read(SAMPLES / f"{call}.wav", dtype="float32")
    script = json.loads((SAMPLES / f"{call}.json").read_text())
    return [audio[int(line["speech_start_s"] * rate): int(line["speech_end_s"] * rate)] for line in script["lines"]]


CALLER = _lines("address_change")
AGENT = _lines("claim_status")


def build(path, placements, rate=16_000, seconds=None, subtype="PCM_16", noise_db=None, channels=2):
    """placements: (channel, start_s, line, cut_s or None); lines are resampled to ``rate``."""
    end = max(start + (len(line) / 16_000 if cut is None else cut) for _, start, line, cut in placements)
    total = int(round((seconds or end + 1.0) * rate))
    out = np.zeros((total, channels), dtype=np.float32)
    if noise_db is not None:
        out += np.random.default_rng(1).normal(0, 10 ** (noise_db / 20), out.shape).astype(np.float32)
    for channel, start, line, cut in placements:
        pcm = line if rate == 16_000 else soxr.resample(line, 16_000, rate)
        if cut is not None:
            pcm = pcm[: int(round(cut * rate))]
        at = int(round(start * rate))
        out[at: at + len(pcm), channel] += pcm
    sf.write(path, out, rate, subtype=subtype)
    return path


def dur(line) -> float:
    return len(line) / 16_000


@pytest.mark.parametrize("rate,subtype,ext", [(16_000, "PCM_16", "wav"), (8_000, "PCM_16", "wav"),
                                              (22_050, "PCM_24", "wav"), (44_100, "FLOAT", "wav"),
                                              (48_000, "PCM_16", "flac")])
def test_response_gaps_within_20_ms_at_any_rate(tmp_path, rate, subtype, ext):
    c1, c2 = 1.0, 1.0 + dur(CALLER[0]) + 0.730 + dur(AGENT[0]) + 0.9
    a1 = 1.0 + dur(CALLER[0]) + 0.730
    a2 = c2 + dur(CALLER[1]) + 1.415
    path = build(tmp_path / f"call.{ext}", [(0, c1, CALLER[0], None), (1, a1, AGENT[0], None),
                                           (0, c2, CALLER[1], None), (1, a2, AGENT[1], None)], rate, subtype=subtype)
    a = analyze_recording(path)
    assert a.meta["sample_rate"] == rate
    assert list(a.turns["turn"]) == [1, 2]
    assert np.allclose(a.turns["response_gap_ms"], [730.0, 1415.0], atol=TOL_MS), a.turns
    assert np.allclose(a.turns["caller_start_ms"], [c1 * 1000, c2 * 1000], atol=TOL_MS)
    assert a.barge_ins.empty and not a.turns["interrupted"].any()
    talk_s = sum(dur(x) for x in (CALLER[0], CALLER[1], AGENT[0], AGENT[1]))
    assert abs((a.caller_talk_ms + a.agent_talk_ms) / 1000 - talk_s) < 4 * 0.3  # pauses inside lines may drop


def test_barge_in_with_known_overlap(tmp_path):
    # The agent answers 500 ms after the caller; the caller cuts in 1.2 s into it; the agent stops 640 ms later.
    a1 = 1.0 + dur(CALLER[0]) + 0.5
    barge = a1 + 1.2
    path = build(tmp_path / "barge.wav", [(0, 1.0, CALLER[0], None), (1, a1, AGENT[0], 1.2 + 0.64),
                                          (0, barge, CALLER[1], None), (1, barge + dur(CALLER[1]) + 0.6, AGENT[1], None)])
    a = analyze_recording(path)
    assert len(a.barge_ins) == 1, a.barge_ins
    b = a.barge_ins.iloc[0]
    assert (b["interrupter"], b["interrupted_speaker"], b["stopped"], b["turn"]) == ("caller", "agent", "agent", 1)
    assert abs(b["overlap_ms"] - 640) <= TOL_MS and abs(b["start_ms"] - barge * 1000) <= TOL_MS
    assert list(a.turns["interrupted"]) == [True, False]
    assert abs(a.turns["response_gap_ms"].iloc[0] - 500) <= TOL_MS
    assert abs(a.turns["response_gap_ms"].iloc[1] - 600) <= TOL_MS
    assert abs(a.overlap_ms - 640) <= TOL_MS


def test_agent_talks_over_caller_gives_negative_gap(tmp_path):
    # The agent starts 300 ms before the caller finishes; the caller stops first.
    a1 = 1.0 + dur(CALLER[0]) - 0.3
    a = analyze_recording(build(tmp_path / "over.wav", [(0, 1.0, CALLER[0], None), (1, a1, AGENT[0], None)]))
    assert abs(a.turns["response_gap_ms"].iloc[0] + 300) <= TOL_MS
    b = a.barge_ins.iloc[0]
    assert (b["interrupter"], b["stopped"]) == ("agent", "caller") and abs(b["overlap_ms"] - 300) <= TOL_MS
    assert not a.turns["interrupted"].iloc[0]  # the caller did not talk over the agent's reply


def test_long_silence_in_noise(tmp_path):
    # 12.5 s of dead air after the agent, on a hissing line (-60 dBFS noise on both channels).
    a1 = 1.0 + dur(CALLER[0]) + 0.8
    quiet_from = a1 + dur(AGENT[0])
    c2 = quiet_from + 12.5
    path = build(tmp_path / "quiet.wav", [(0, 1.0, CALLER[0], None), (1, a1, AGENT[0], None),
                                          (0, c2, CALLER[1], None)], noise_db=-60)
    a = analyze_recording(path, long_silence_ms=5000)
    assert len(a.silences) == 1, a.silences
    s = a.silences.iloc[0]
    assert abs(s["duration_ms"] - 12_500) <= TOL_MS and s["after"] == "agent"
    assert abs(a.turns["response_gap_ms"].iloc[0] - 800) <= TOL_MS
    assert np.isnan(a.turns["response_gap_ms"].iloc[1])  # the last caller line is never answered


def test_swapped_channel_flags(tmp_path):
    a1 = 1.0 + dur(CALLER[0]) + 0.65
    path = build(tmp_path / "swapped.wav", [(1, 1.0, CALLER[0], None), (0, a1, AGENT[0], None)])
    right = analyze_recording(path, caller_channel=1, agent_channel=0)
    assert abs(right.turns["response_gap_ms"].iloc[0] - 650) <= TOL_MS and right.greeting_segments == 0
    wrong = analyze_recording(path)  # the defaults read the agent as the caller: it speaks last, unanswered
    # (>= 1: read as the agent, without hysteresis, the caller line may split at its longest pause)
    assert wrong.greeting_segments >= 1 and np.isnan(wrong.turns["response_gap_ms"].iloc[0])


def test_mono_and_bad_channels_are_one_line_errors(tmp_path):
    mono = tmp_path / "mono.wav"
    sf.write(mono, np.zeros(16_000, np.int16), 16_000)
    with pytest.raises(AudioInputError, match="2 are needed"):
        analyze_recording(mono)
    stereo = build(tmp_path / "s.wav", [(0, 0.5, CALLER[0], None)])
    with pytest.raises(AudioInputError, match="agent channel 3 does not exist"):
        analyze_recording(stereo, agent_channel=3)


def test_streamed_levels_equal_whole_file_levels(tmp_path):
    # 25 s at 22.05 kHz crosses the 10 s read blocks at frame boundaries that are not whole samples.
    path = build(tmp_path / "long.wav", [(0, 9.99, CALLER[0], None), (1, 19.995, AGENT[0], None)], 22_050, seconds=25.003)
    levels = frame_levels(recording_info(path, 2), [0, 1]).db
    audio, rate = sf.read(path, dtype="float32", always_2d=True)
    n = len(audio) * 100 // rate
    bounds = np.arange(n + 1) * rate // 100
    want = [10 * np.log10(np.maximum((audio[b0:b1, 0].astype(np.float64) ** 2).mean(), 1e-12))
            for b0, b1 in zip(bounds[:-1], bounds[1:])]
    assert levels.shape[1] in (n, n + 1)
    assert np.allclose(levels[0, :n], np.maximum(want, -120), atol=1e-6)


def test_vad_hangover_and_blips():
    db = np.full(300, -120.0)
    db[10:50] = -20.0
    db[70:100] = -20.0  # 200 ms pause: inside the segment
    db[150:153] = -20.0  # 30 ms click: dropped
    db[200:250] = -20.0  # 1 s later: a new segment
    assert speech_segments(db).tolist() == [[100, 1000], [2000, 2500]]


def test_conversation_pure_counts():
    a = analyze_segments([[1000, 2000], [2200, 3000], [6000, 7000]], [[0, 500], [3400, 5000]], 8000, 2000)
    assert a.greeting_segments == 1
    assert a.turns[["caller_segments", "agent_segments"]].values.tolist() == [[2, 1], [1, 0]]
    assert a.turns["response_gap_ms"].iloc[0] == 400
    assert a.caller_talk_ms == 2800 and a.agent_talk_ms == 2100 and a.talk_ratio == pytest.approx(2800 / 4900)
    assert a.silences[["start_ms", "end_ms"]].values.tolist() == []  # longest gap is 1 s


def test_compare_turns_splits_the_difference():
    conv_start = 1_000_000_000_000
    analysis = analyze_segments([[1000, 2000]], [[2700, 4000]], 5000)
    turns = pd.DataFrame({
        "trace_id": ["t"], "conversation_span_id": ["c"], "conversation": ["call.wav"], "turn": [1],
        "user_end_ns": [conv_start + 2_100 * 1_000_000], "bot_onset_ns": [conv_start + 2_650 * 1_000_000],
        "v2v_ms": [550.0]})
    out = compare_turns(turns, {("t", "c"): conv_start}, {"t": analysis})
    row = out.iloc[0]
    assert row["acoustic_v2v_ms"] == 700 and row["v2v_delta_ms"] == pytest.approx(150)
    assert row["ac_user_end_delta_ms"] == pytest.approx(-100) and row["ac_bot_start_delta_ms"] == pytest.approx(50)
    [line] = disagreements(pd.concat([turns, out], axis=1))
    assert "turn 1" in line and "+150" in line and "100 ms before" in line and "50 ms after" in line
    assert disagreements(pd.concat([turns, out.assign(v2v_delta_ms=9.0)], axis=1)) == []
    # A bot start 4 s away from any onset in the recording: not matched, and said so.
    late = turns.assign(bot_onset_ns=conv_start + 6_700 * 1_000_000, v2v_ms=4600.0)
    far = compare_turns(late, {("t", "c"): conv_start}, {"t": analysis})
    assert np.isnan(far["acoustic_v2v_ms"].iloc[0]) and far["ac_nearest_onset_ms"].iloc[0] == pytest.approx(-4000)
    [line] = disagreements(pd.concat([late, far], axis=1))
    assert "no bot onset" in line and "-4,000 ms" in line


def test_trace_reads_back_as_turns_with_v2v_equal_to_the_gap(tmp_path):
    a1 = 1.0 + dur(CALLER[0]) + 0.45
    barge = a1 + 1.0
    path = build(tmp_path / "t.wav", [(1, 0.1, AGENT[1], 0.5), (0, 1.0, CALLER[0], None), (1, a1, AGENT[0], 1.3),
                                      (0, barge, CALLER[1], None), (1, barge + dur(CALLER[1]) + 0.9, AGENT[1], None)])
    a = analyze_recording(path)
    count = write_trace(a, tmp_path / "t.jsonl", t0_ns=1_700_000_000_000_000_000)
    tables = read_trace_files([tmp_path / "t.jsonl"])
    spans = tables.spans
    assert count == len(spans) == 1 + len(a.turns) + len(a.caller_segments) + len(a.agent_segments)
    tm = turn_metrics(tables)
    assert np.allclose(tm["v2v_ms"], a.turns["response_gap_ms"], atol=0.001)
    assert list(tm["interrupted"]) == [True, False]
    turn_ids = set(spans.loc[spans["name"] == "turn", "span_id"])
    segs = spans[spans["name"].isin(["user.speech", "bot.speech"])]
    assert (segs["parent_span_id"].isin(turn_ids)).sum() == len(segs) - 1  # the greeting hangs off the conversation
    assert set(tables.events["name"]) == {"voice.barge_in"}



def test_trace_has_the_one_resource_and_replaces_the_file(tmp_path, monkeypatch):
    # Written by voicetrace.otel (resource builder + JSON-lines exporter), not a writer of its own.
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=lab")
    path = build(tmp_path / "t.wav", [(0, 1.0, CALLER[0], None), (1, 1.0 + dur(CALLER[0]) + 0.5, AGENT[0], None)])
    a, out = analyze_recording(path), tmp_path / "t.jsonl"
    write_trace(a, out)
    count = write_trace(a, out)
    requests = [json.loads(line) for line in out.read_text().splitlines()]
    spans = [s for r in requests for rs in r["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == count
    resource = {x["key"]: next(iter(x["value"].values())) for x in requests[0]["resourceSpans"][0]["resource"]["attributes"]}
    assert (resource["deployment.environment"], resource["voice.pipeline"], resource["service.name"]) == ("lab", "acoustic", "voicetrace")

def run_cli(*args, cwd=None):
    return subprocess.run([str(VOICETRACE), *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={"COLUMNS": "140", "PATH": "/usr/bin:/bin"})


def test_analyze_cli_outputs(tmp_path):
    a1 = 1.0 + dur(CALLER[0]) + 0.73
    path = build(tmp_path / "call.wav", [(0, 1.0, CALLER[0], None), (1, a1, AGENT[0], None)], 8_000)
    result = run_cli("analyze", str(path), "--json", "-o", str(tmp_path / "a.html"), "--trace", str(tmp_path / "a.jsonl"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["summary"]["turns"] == 1 and abs(doc["turns"][0]["response_gap_ms"] - 730) <= TOL_MS
    page = (tmp_path / "a.html").read_text()
    assert page.startswith("<!doctype html>") and 'id="timeline"' in page and "Plotly.newPlot" in page
    report = run_cli("report", str(tmp_path / "a.jsonl"), "--json")
    assert report.returncode == 0, report.stderr
    assert abs(json.loads(report.stdout)["turns"][0]["v2v_ms"] - doc["turns"][0]["response_gap_ms"]) < 0.01
    text = run_cli("analyze", str(path), cwd=tmp_path)  # default trace: <stem>.trace.jsonl in the working folder
    assert text.returncode == 0 and "response gap" in text.stdout and (tmp_path / "call.trace.jsonl").exists()


@pytest.mark.parametrize("args,code,needle", [
    (["--caller-channel", "1", "--agent-channel", "1"], 2, "must differ"),
    (["--long-silence-ms", "0"], 2, "must be positive"),
])
def test_analyze_cli_usage_errors(tmp_path, args, code, needle):
    path = build(tmp_path / "call.wav", [(0, 0.5, CALLER[0], None)])
    result = run_cli("analyze", str(path), *args)
    assert result.returncode == code and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stderr


def test_analyze_cli_mono_and_missing(tmp_path):
    mono = tmp_path / "mono.wav"
    sf.write(mono, np.zeros(8_000, np.int16), 8_000)
    for target, needle in ((mono, "2 are needed"), (tmp_path / "nope.wav", "no such file")):
        result = run_cli("analyze", str(target), "--no-trace")
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 3 and len(lines) == 1 and needle in lines[0], result.stderr
