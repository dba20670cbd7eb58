"""Barge-in and a non-English call, end to end on the real models and llama-server."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
import soundfile as sf

from voicetrace import semconv as sc
from voicetrace.traces.files import read_trace_files

from tests.conftest import SAMPLES, VOICETRACE

pytestmark = pytest.mark.integration


def run_call(tmp_path, call: str, *args: str):
    result = subprocess.run(
        [str(VOICETRACE), "run", str(SAMPLES / f"{call}.wav"), "--out", str(tmp_path), "--run-id", call,
         "--capture-content", *args],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="140"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return tmp_path / call, read_trace_files([tmp_path / call / "trace.jsonl"])


def test_barge_in_ends_bot_speech_interrupted_with_its_latency(tmp_path):
    run_dir, tables = run_call(tmp_path, "barge_in")
    spans = tables.spans
    conv_start = spans[spans["name"] == sc.SPAN_CONVERSATION]["start_ns"].iloc[0]
    script = json.loads((SAMPLES / "barge_in.json").read_text())
    cut_in_s = script["lines"][1]["speech_start_s"]  # the caller speaks over the first answer
    turns = spans[spans["name"] == sc.SPAN_TURN].sort_values("start_ns")
    first = turns.iloc[0]
    assert first.attributes[sc.ATTR_TURN_INTERRUPTED] is True
    bot = spans[(spans["parent_span_id"] == first.span_id) & (spans["name"] == sc.SPAN_BOT_SPEECH)].iloc[0]
    assert bot.attributes[sc.ATTR_BOT_INTERRUPTED] is True
    latency_ms = bot.attributes[sc.ATTR_BOT_INTERRUPTION_LATENCY_MS]
    assert 0 < latency_ms < 1000
    # The bot stopped latency_ms after the caller's onset, and the onset is the scripted one.
    onset_s = (bot.end_ns - conv_start) / 1e9 - latency_ms / 1000
    assert abs(onset_s - cut_in_s) < 0.15
    assert bot.attributes[sc.ATTR_BOT_UNSPOKEN_TOKENS] >= 1
    # In the recording, the bot's audio stops there too.
    audio, rate = sf.read(run_dir / "bot.wav", dtype="int16")
    stop = int((bot.end_ns - conv_start) / 1e9 * rate)
    assert np.abs(audio[stop - int(0.3 * rate):stop]).max() > 1000
    assert not audio[stop + int(0.06 * rate): stop + int(0.5 * rate)].any()


def test_language_is_recorded_on_the_turn_for_a_hindi_call(tmp_path):
    _, tables = run_call(tmp_path, "hindi_claim", "--language", "hi")
    spans = tables.spans
    turn = spans[spans["name"] == sc.SPAN_TURN].iloc[0]
    assert turn.attributes[sc.ATTR_LANGUAGE] == "hi"
    asr = spans[spans["name"] == sc.SPAN_ASR].iloc[0]
    assert asr.attributes[sc.ATTR_ASR_MODEL] == "whisper-base"
    assert asr.attributes[sc.ATTR_ASR_TRANSCRIPT_CHARS] > 0
