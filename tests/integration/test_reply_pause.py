"""A reply that pauses and resumes, on the real pipeline (WebRTC VAD + smart-turn, faster-whisper, Piper):
the scripted LLM stalls 4.5 s before its last word, longer than pipecat's TTS waits for audio (3 s).

pipecat then closes the TTS context (TTSStoppedFrame) and stops the bot after the first sentence; the
LLM ends; TTS speaks the last sentence on a new context and the bot starts again. That is what a
loaded machine does to a slow LLM, made deterministic: the last sentence is still the turn's, so
bot.wav has audio only inside bot.speech spans, and the turn's bot.speech runs to its last audio.
"""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
import soundfile as sf

from voicetrace import semconv as sc
from voicetrace.run.folder import RunFolder
from voicetrace.servers.scripted_llm import Reply, Script, ScriptedLLMServer
from voicetrace.traces.files import read_trace_files

from tests.conftest import VOICETRACE
from tests.integration.test_run_faults import make_call

pytestmark = pytest.mark.integration

FIRST, LAST = "Hello, I'm here to help with your claim.", "Can you tell me more about it?"
STALL_MS = 4500.0


@pytest.fixture(scope="module")
def paused_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pause")
    call = make_call(out / "one_turn.wav", [("claim_status", 0)], gap_s=1.0)
    reply = Reply(f"{FIRST} {LAST}", ttft_ms=50, itl_ms=15)
    gaps = [15.0] * len(reply.tokens())
    gaps[-2] = STALL_MS  # before the last word: the last sentence reaches TTS only when the LLM ends
    reply.itl_ms = gaps
    with ScriptedLLMServer(Script([reply])) as server:
        result = subprocess.run(
            [str(VOICETRACE), "run", str(call), "--out", str(out), "--run-id", "pause", "--llm-url", server.base_url,
             "--model", "scripted", "--tools", "off"],
            capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="140"),
        )
    assert result.returncode == 0, result.stderr[-3000:]
    return RunFolder(out / "pause")


def test_the_bot_stopped_and_started_again_within_the_turn(paused_run):
    log = paused_run.pipeline_log.read_text()
    assert log.count("Bot started speaking") == 2, "the stall did not split the reply: nothing tested"
    spans = read_trace_files([paused_run.trace]).spans
    (turn,) = spans[spans["name"] == sc.SPAN_TURN].itertuples()
    (bot,) = spans[(spans["name"] == sc.SPAN_BOT_SPEECH) & (spans["parent_span_id"] == turn.span_id)].itertuples()
    conv_start = spans.query("name == 'conversation'").start_ns.iloc[0]
    audio, rate = sf.read(paused_run.bot_audio, dtype="int16")
    last_audio_s = np.flatnonzero(audio)[-1] / rate  # bot.wav is exact zeros where the bot is silent
    # The span runs to the last audio played (the resumed sentence), within one 40 ms chunk and a frame.
    assert abs((bot.end_ns - conv_start) / 1e9 - last_audio_s) < 0.06, (bot.end_ns, last_audio_s)
    # The pause (≈ the 4.5 s stall − pipecat's 3 s TTS timeout) is not bot audio.
    assert bot.attributes[sc.ATTR_BOT_AUDIO_MS] < (bot.end_ns - bot.start_ns) / 1e6 - 500


def test_bot_wav_has_audio_only_inside_bot_speech(paused_run):
    bot, rate = sf.read(paused_run.bot_audio, dtype="int16")
    spans = read_trace_files([paused_run.trace]).spans
    conv_start = spans.query("name == 'conversation'").start_ns.iloc[0]
    inside = np.zeros(len(bot), dtype=bool)
    slack = int(0.06 * rate)
    for span in spans.query("name == 'bot.speech'").itertuples():
        a = int((span.start_ns - conv_start) / 1e9 * rate)
        b = int((span.end_ns - conv_start) / 1e9 * rate)
        inside[max(0, a - slack): b + slack] = True
    assert bot.any() and not bot[~inside].any(), "bot audio outside every bot.speech span"
