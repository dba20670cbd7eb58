"""pipelines/live_client.py speaks what pipecat's WebSocket transport reads and writes, and knows
when the agent has answered the caller's last line (no models, no sockets)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import numpy as np
import pytest
from pipecat.frames.frames import InputAudioRawFrame, InterruptionFrame, OutputAudioRawFrame
from pipecat.serializers.protobuf import ProtobufFrameSerializer

from voicetrace.audio.source import open_call

from tests.conftest import ROOT, SAMPLES


@pytest.fixture(scope="module")
def client():
    spec = importlib.util.spec_from_file_location("live_client", ROOT / "pipelines" / "live_client.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["live_client"] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    yield module
    del sys.modules["live_client"]


class FakeRecorder:
    def __init__(self):
        self.bot = []

    def add_bot(self, offset_ns, pcm, sample_rate):
        self.bot.append((offset_ns, len(pcm), sample_rate))


def test_caller_audio_arrives_as_the_input_audio_pipecat_feeds_the_pipeline(client):
    pcm = (np.arange(320, dtype=np.int16) * 50).tobytes()
    frame = asyncio.run(ProtobufFrameSerializer().deserialize(client.audio_message(pcm)))
    assert isinstance(frame, InputAudioRawFrame)
    assert (frame.audio, frame.sample_rate, frame.num_channels) == (pcm, 16_000, 1)


def test_agent_audio_and_interruptions_from_the_serializer_reach_the_playback(client, monkeypatch):
    serializer = ProtobufFrameSerializer()
    speech = b"\x01\x02" * 640  # 40 ms at 16 kHz
    messages = [asyncio.run(serializer.serialize(OutputAudioRawFrame(audio=speech, sample_rate=16_000, num_channels=1))),
                asyncio.run(serializer.serialize(InterruptionFrame()))]

    class Socket:
        def __aiter__(self):
            return self

        async def __anext__(self):
            if not messages:
                raise StopAsyncIteration
            return messages.pop(0)

    recorder = FakeRecorder()
    now = iter([1_000_000_000])
    monkeypatch.setattr(client.time, "monotonic_ns", lambda: next(now))
    playback = client.Playback(recorder, start_ns=0)
    asyncio.run(client.receive(Socket(), playback))
    assert recorder.bot == [(1_000_000_000, len(speech), 16_000)]
    assert playback.audio_ns == 40_000_000 and playback.interruptions == 1


def test_a_reply_is_chunks_back_to_back_and_answers_lines_that_ended_before_it(client, monkeypatch):
    recorder, clock = FakeRecorder(), {"ns": 0}
    monkeypatch.setattr(client.time, "monotonic_ns", lambda: clock["ns"])
    playback = client.Playback(recorder, start_ns=0)
    chunk = b"\x00\x00" * 640  # 40 ms
    for arrive_ms in (5_000, 5_020, 5_040, 5_100):  # sent a chunk ahead, sometimes a little late
        clock["ns"] = arrive_ms * 1_000_000
        playback.add(chunk, 16_000)
    assert [at for at, _, _ in recorder.bot] == [5_000_000_000, 5_040_000_000, 5_080_000_000, 5_120_000_000]
    clock["ns"] = 9_000_000_000  # after a pause: the next reply
    playback.add(chunk, 16_000)
    assert playback.reply_starts_ns == [5_000_000_000, 9_000_000_000]
    assert playback.answered(after_ns=8_000_000_000) and not playback.answered(after_ns=9_500_000_000)


def test_the_callers_last_line_ends_where_the_sample_says(client):
    import json

    for name in ("claim_status", "barge_in"):
        truth_s = json.loads((SAMPLES / f"{name}.json").read_text())["lines"][-1]["speech_end_s"]
        assert client.last_speech_end_ns(open_call(SAMPLES / f"{name}.wav")) / 1e9 == pytest.approx(truth_s, abs=0.05)
