"""CallTrace(record_audio=True): the observer records caller in and bot out on the call's timeline;
without the flag nothing is recorded."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np
import orjson
import pytest
import soundfile as sf
from pipecat.frames.frames import EndFrame, InputAudioRawFrame, OutputAudioRawFrame, StartFrame, TTSAudioRawFrame
from pipecat.observers.base_observer import FramePushed
from pipecat.processors.frame_processor import FrameDirection
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from voicetrace import CallTrace
from voicetrace.clock import FakeClock

MS = 1_000_000
PIPELINE_CLOCK_START_NS = 5_000 * MS
CALLER_RATE, BOT_RATE = 16_000, 24_000


class _Clocked:
    """A transport whose pipeline clock started at PIPELINE_CLOCK_START_NS (what the observer reads)."""

    def get_clock(self):
        return SimpleNamespace(_time=PIPELINE_CLOCK_START_NS)


class FakeInput(_Clocked, BaseInputTransport):
    pass


class FakeOutput(_Clocked, BaseOutputTransport):
    pass


def _tone(hz: float, samples: int, rate: int, start: int = 0) -> bytes:
    t = (np.arange(samples) + start) / rate
    return (0.5 * 32767 * np.sin(2 * np.pi * hz * t)).astype(np.int16).tobytes()


async def _call(vt: CallTrace, jitter_ms: tuple = (0.0, 2.5, 0.7, 3.1)) -> None:
    """A 6 s call: caller frames every 20 ms (speech 1.0–2.0 s, none between 4.0 and 5.2 s: the client
    stopped sending), then a bot reply of 1 s from 3.0 s in 40 ms chunks at 24 kHz, each pushed once played."""
    source_in, source_out = FakeInput(TransportParams()), FakeOutput(TransportParams())

    async def push(at_ms: float, frame, source=None):
        await vt.observer.on_push_frame(FramePushed(source=source, destination=None, frame=frame,
                                                    direction=FrameDirection.DOWNSTREAM, timestamp=round(at_ms * MS)))

    await push(0, StartFrame(), source_in)
    for n in range(300):
        if 200 <= n < 260:
            continue  # 4.0–5.2 s: nothing arrives
        speech = 50 <= n < 100
        pcm = _tone(440, 320, CALLER_RATE, n * 320) if speech else b"\x00\x00" * 320
        await push(n * 20 + 1 + jitter_ms[n % len(jitter_ms)], InputAudioRawFrame(pcm, CALLER_RATE, 1), source_in)
        if 150 <= n < 175:  # the bot's 25 chunks of 40 ms, played 3.0–4.0 s, each pushed as it finishes
            j = n - 150
            chunk = _tone(660, 960, BOT_RATE, j * 960)
            await push(3000 + (j + 1) * 40 + jitter_ms[j % len(jitter_ms)], TTSAudioRawFrame(chunk, BOT_RATE, 1), source_out)
    await push(6000, EndFrame(), source_in)


def _loud_s(channel: np.ndarray, rate: int) -> list[tuple[float, float]]:
    """Stretches of 5 ms windows above −30 dBFS, as (start s, end s)."""
    win = rate // 200
    frames = channel[: len(channel) // win * win].reshape(-1, win).astype(np.float64)
    loud = np.sqrt((frames ** 2).mean(axis=1)) > 10 ** (-30 / 20)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], loud.astype(int), [0]])))
    return [(a * win / rate, b * win / rate) for a, b in zip(edges[::2], edges[1::2])]


def test_no_audio_is_recorded_unless_asked(tmp_path):
    with CallTrace(tmp_path / "trace.jsonl", otlp=False, clock=FakeClock(1_700_000_000 * 10**9)) as vt:
        asyncio.run(_call(vt))
    assert vt.observer.audio_tap is None and vt.recording is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.jsonl"]


def test_caller_and_bot_land_on_their_channels_at_their_times(tmp_path):
    wall0 = 1_700_000_000 * 10**9
    with CallTrace(tmp_path / "trace.jsonl", otlp=False, record_audio=True, clock=FakeClock(wall0)) as vt:
        asyncio.run(_call(vt))
    assert vt.recording == tmp_path / "call.wav"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.wav", "call.wav", "trace.jsonl"]
    audio, rate = sf.read(str(vt.recording), dtype="float32")
    assert rate == CALLER_RATE and audio.shape[1] == 2
    caller, bot = _loud_s(audio[:, 0], rate), _loud_s(audio[:, 1], rate)
    # Caller frames follow each other sample by sample despite jitter; the stall leaves silence, not a shift.
    assert caller == [(1.0, 2.0)]
    left, _ = sf.read(str(vt.recording), dtype="int16")
    expected = np.frombuffer(b"".join(_tone(440, 320, CALLER_RATE, n * 320) for n in range(50, 100)), np.int16)
    assert np.array_equal(left[CALLER_RATE:2 * CALLER_RATE, 0], expected)  # sample-exact at 1.0 s
    assert len(bot) == 1 and abs(bot[0][0] - 3.0) <= 0.005 and abs(bot[0][1] - 4.0) <= 0.005, bot
    assert len(audio) >= 6.0 * rate - 2 * 320  # the last caller frame ends at 6.0 s
    # Sample 0 is call time zero: the conversation span starts at the pipeline's StartFrame.
    spans = [s for line in (tmp_path / "trace.jsonl").read_bytes().splitlines() for r in orjson.loads(line)["resourceSpans"]
             for sc_ in r["scopeSpans"] for s in sc_["spans"]]
    (conv,) = [s for s in spans if s["name"] == "conversation"]
    assert int(conv["startTimeUnixNano"]) == FakeClock(wall0).to_wall_ns(PIPELINE_CLOCK_START_NS)


def test_the_stall_is_kept_as_silence_at_the_right_place(tmp_path):
    """Caller frames after a 1.2 s stall (longer than RESYNC_NS: audio stopped coming) start at their own
    time (a marker tone at 5.2 s)."""
    with CallTrace(tmp_path / "trace.jsonl", otlp=False, record_audio=True, clock=FakeClock(10**18)) as vt:
        async def call():
            src = FakeInput(TransportParams())
            for n in list(range(0, 200)) + list(range(260, 285)):
                pcm = _tone(440, 320, CALLER_RATE) if n == 260 else b"\x00\x00" * 320
                await vt.observer.on_push_frame(FramePushed(source=src, destination=None, frame=InputAudioRawFrame(
                    pcm, CALLER_RATE, 1), direction=FrameDirection.DOWNSTREAM, timestamp=(n * 20 + 2) * MS))
        asyncio.run(call())
    audio, rate = sf.read(str(vt.recording), dtype="float32")
    (marker,) = _loud_s(audio[:, 0], rate)
    assert abs(marker[0] - 5.2) <= 0.005 and abs(marker[1] - 5.22) <= 0.005, marker


def test_recording_needs_one_call_per_folder(tmp_path):
    with pytest.raises(ValueError, match="one call per folder"):
        CallTrace(tmp_path / "trace.jsonl", record_audio=True, append=True)


def test_frames_from_elsewhere_are_not_recorded():
    from voicetrace.capture.audio_tap import CallAudioTap

    out, inp = FakeOutput(TransportParams()), FakeInput(TransportParams())
    assert CallAudioTap.side_of(OutputAudioRawFrame(b"\x00\x00", 16000, 1), inp) is None
    assert CallAudioTap.side_of(TTSAudioRawFrame(b"\x00\x00", 16000, 1), object()) is None  # TTS output, not played
    assert CallAudioTap.side_of(InputAudioRawFrame(b"\x00\x00", 16000, 1), inp) == "caller"
    assert CallAudioTap.side_of(TTSAudioRawFrame(b"\x00\x00", 16000, 1), out) == "bot"


def test_a_pause_between_sentences_is_kept(tmp_path):
    """Two sentences of 0.4 s with 20 ms of nothing between them (TTS catching up): the second starts at
    3.42 s, where it played, not at 3.40 s."""
    with CallTrace(tmp_path / "trace.jsonl", otlp=False, record_audio=True, clock=FakeClock(10**18)) as vt:
        async def call():
            src_in, src_out = FakeInput(TransportParams()), FakeOutput(TransportParams())
            for n in range(250):
                await vt.observer.on_push_frame(FramePushed(source=src_in, destination=None, frame=InputAudioRawFrame(
                    b"\x00\x00" * 320, CALLER_RATE, 1), direction=FrameDirection.DOWNSTREAM, timestamp=(n * 20 + 1) * MS))
                if 150 <= n < 170:
                    j = n - 150
                    played_ms = 3000 + (j + 1) * 40 + (20 if j >= 10 else 0) + 1.5
                    await vt.observer.on_push_frame(FramePushed(source=src_out, destination=None, frame=TTSAudioRawFrame(
                        _tone(660, 960, BOT_RATE, j * 960), BOT_RATE, 1), direction=FrameDirection.DOWNSTREAM,
                        timestamp=round(played_ms * MS)))
        asyncio.run(call())
    audio, rate = sf.read(str(vt.recording), dtype="float32")
    parts = _loud_s(audio[:, 1], rate)
    assert len(parts) == 2, parts
    assert abs(parts[0][0] - 3.0) <= 0.005 and abs(parts[1][0] - 3.42) <= 0.005 and abs(parts[1][1] - 3.82) <= 0.006, parts


def test_late_caller_frames_that_catch_up_are_not_shifted(tmp_path):
    """A loaded pipeline pushes caller frames 300 ms late, then catches up in a burst: the audio keeps its
    place (sample count is the clock), so a marker tone after the stall is where it was said (2.0 s)."""
    with CallTrace(tmp_path / "trace.jsonl", otlp=False, record_audio=True, clock=FakeClock(10**18)) as vt:
        async def call():
            src = FakeInput(TransportParams())
            for n in range(150):
                late_ms = 300 if 50 <= n < 65 else max(0, 300 - (n - 65) * 20) if 65 <= n < 80 else 0
                pcm = _tone(440, 320, CALLER_RATE) if n == 100 else b"\x00\x00" * 320
                await vt.observer.on_push_frame(FramePushed(source=src, destination=None, frame=InputAudioRawFrame(
                    pcm, CALLER_RATE, 1), direction=FrameDirection.DOWNSTREAM, timestamp=(n * 20 + 2 + late_ms) * MS))
        asyncio.run(call())
    audio, rate = sf.read(str(vt.recording), dtype="float32")
    (marker,) = _loud_s(audio[:, 0], rate)
    assert abs(marker[0] - 2.0) <= 0.005, marker
