"""Loading and pacing input audio; recording both sides on one timeline."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from voicetrace.audio.recorder import CallRecorder
from voicetrace.audio.source import FRAME_BYTES, AudioInputError, iter_pipeline_frames, open_call


def tone(seconds: float, rate: int, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@pytest.mark.parametrize("rate", [8000, 16000, 22050, 44100, 48000])
def test_any_common_rate_becomes_16k_20ms_frames(tmp_path, rate):
    path = tmp_path / "call.wav"
    sf.write(path, tone(1.0, rate), rate, subtype="PCM_16")
    frames = list(iter_pipeline_frames(open_call(path)))
    assert all(len(f) == FRAME_BYTES for f in frames)
    assert 50 <= len(frames) <= 51  # 1 s = 50 frames of 20 ms (+1 for resampler tail padding)


def test_caller_channel_is_selectable(tmp_path):
    path = tmp_path / "stereo.wav"
    stereo = np.column_stack([np.zeros(16000, np.float32), tone(1.0, 16000)])
    sf.write(path, stereo, 16000, subtype="PCM_16")
    left = b"".join(iter_pipeline_frames(open_call(path, caller_channel=0)))
    right = b"".join(iter_pipeline_frames(open_call(path, caller_channel=1)))
    assert not np.frombuffer(left, np.int16).any()
    assert np.abs(np.frombuffer(right, np.int16)).max() > 10000
    with pytest.raises(AudioInputError, match="caller channel 2 does not exist"):
        open_call(path, caller_channel=2)


def test_missing_and_non_audio_files_are_one_line_errors(tmp_path):
    with pytest.raises(AudioInputError, match="no such file"):
        open_call(tmp_path / "nope.wav")
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio\n")
    with pytest.raises(AudioInputError, match="not a readable audio file") as err:
        open_call(text)
    assert "\n" not in str(err.value)


def test_recorder_places_bot_audio_on_the_call_timeline(tmp_path):
    rec = CallRecorder(tmp_path, sample_rate=16000)
    caller = (np.ones(320, np.int16) * 1000).tobytes()
    for i in range(100):  # 2 s of caller audio
        rec.add_caller(i * 20_000_000, caller)
    bot = (np.ones(1600, np.int16) * 2000).tobytes()  # 100 ms
    rec.add_bot(500_000_000, bot, 16000)  # plays at 0.5 s
    rec.add_bot(600_000_000, bot, 16000)  # contiguous
    rec.add_bot(2_500_000_000, bot, 16000)  # after the caller's audio ended
    rec.close()
    bot_track, rate = sf.read(tmp_path / "bot.wav", dtype="int16")
    assert rate == 16000
    voiced = np.flatnonzero(bot_track)
    assert voiced[0] == 8000 and voiced[-1] == 2.6 * 16000 - 1
    assert not bot_track[11200:40000].any()
    call, _ = sf.read(tmp_path / "call.wav", dtype="int16")
    assert call.shape == (len(bot_track), 2)
    assert (call[:32000, 0] == 1000).all() and not call[32000:, 0].any()
    assert (call[:, 1] == bot_track).all()
    assert not (tmp_path / ".caller.wav").exists()


def test_16k_16bit_input_passes_through_bit_exact(tmp_path):
    path = tmp_path / "call.wav"
    samples = (np.random.default_rng(1).integers(-32768, 32767, 16000)).astype(np.int16)
    sf.write(path, samples, 16000, subtype="PCM_16")
    fed = np.frombuffer(b"".join(iter_pipeline_frames(open_call(path))), np.int16)
    assert (fed[: len(samples)] == samples).all()


def _chunks_played(rec: CallRecorder, start_ns: int, audio: np.ndarray, rate: int, chunk: int) -> int:
    """Feed ``audio`` as the output transport does: back to back, each chunk at the previous one's end."""
    at = start_ns
    for i in range(0, len(audio), chunk):
        piece = audio[i : i + chunk]
        rec.add_bot(at, piece.tobytes(), rate)
        at += len(piece) * 1_000_000_000 // rate
    return at


def test_bot_audio_in_many_chunks_equals_one_shot_resampling_of_the_whole(tmp_path):
    import soxr

    rate = 22_050  # Piper voices speak at 22.05 kHz
    t = np.arange(rate * 2) / rate
    speech = (8000 * np.sin(2 * np.pi * (300 + 200 * t) * t)).astype(np.int16)  # a 2 s sweep
    rec = CallRecorder(tmp_path, sample_rate=16000)
    end_ns = _chunks_played(rec, 500_000_000, speech, rate, chunk=1000)  # 45.35 ms chunks: edges off the sample grid
    _chunks_played(rec, end_ns + 1_000_000_000, speech[:rate // 2], rate, chunk=777)  # a second reply after 1 s
    rec.close()
    track, _ = sf.read(tmp_path / "bot.wav", dtype="int16")
    whole = soxr.resample(speech, rate, 16000)
    first = track[8000 : 8000 + len(whole)].astype(int)
    assert len(first) == len(whole) == 32000
    assert np.abs(first - whole).max() <= 4  # int16 steps: the stream and the one-shot agree to rounding
    assert not track[8000 + len(whole) : 8000 + len(whole) + 15000].any()  # the gap stays silent
    second = soxr.resample(speech[:rate // 2], rate, 16000)
    start = round((end_ns + 1_000_000_000) * 16000 / 1e9)
    assert len(track) == start + len(second)
    assert np.abs(track[start:].astype(int) - second).max() <= 4
