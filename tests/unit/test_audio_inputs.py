"""Issue 8, audio in: every kind of file a user may hand `voicetrace run`, good and bad.

Bad files are one line (AudioInputError; exit 3 from the real CLI, before any server starts);
every common rate, sample format and channel count reaches the pipeline as the same 16 kHz
mono tone; a one-hour call is streamed with flat memory.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import soundfile as sf

from voicetrace.audio.checks import check_call, wav_declared_data_bytes
from voicetrace.audio.source import FRAME_BYTES, PIPELINE_SAMPLE_RATE, AudioInputError, iter_pipeline_frames, open_call

from tests.unit.test_cli_errors import assert_one_line_error, run_cli

TONE_HZ = 440.0


def tone(seconds: float, rate: int, freq: float = TONE_HZ) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def fed_samples(path, caller_channel: int = 0) -> np.ndarray:
    call = open_call(path, caller_channel)
    assert check_call(call) == []
    frames = list(iter_pipeline_frames(call))
    assert all(len(f) == FRAME_BYTES for f in frames)
    return np.frombuffer(b"".join(frames), np.int16).astype(np.float64) / 32768.0


def dominant_hz(samples: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / PIPELINE_SAMPLE_RATE)[spectrum.argmax()])


# --- files that are not usable audio: one line each -----------------------------------------

def _wav_bytes(tmp_path, seconds=1.0) -> bytes:
    path = tmp_path / "good.wav"
    sf.write(path, tone(seconds, 16000), 16000, subtype="PCM_16")
    return path.read_bytes()


def _bad_files(tmp_path) -> dict:
    good = _wav_bytes(tmp_path)
    corrupt_fmt = bytearray(good)
    corrupt_fmt[20:22] = b"\x99\x00"  # audio format code 0x0099: no such WAV format
    flac = tmp_path / "src.flac"
    sf.write(flac, (np.random.default_rng(3).standard_normal(16000 * 10) * 0.1).astype(np.float32), 16000)
    flac_bytes = flac.read_bytes()
    return {
        "not_a_wav.wav": (b"ID3\x04\x00 an mp3 tag and then nothing\n", "not a readable audio file"),
        "text.wav": (b"hello, this is a text file\n" * 20, "not a readable audio file"),
        "zero_length.wav": (b"", "is empty (0 bytes)"),
        "corrupt_header.wav": (b"RIFF\xff\xff\xff\xffWAVEfmt " + bytes(100), "not a readable audio file"),
        "corrupt_fmt.wav": (bytes(corrupt_fmt), "not a readable audio file"),
        "header_only.wav": (good[:44], "contains no audio"),
        "truncated.flac": (flac_bytes[: len(flac_bytes) // 2], "corrupt or truncated after"),
    }


@pytest.mark.parametrize("name", ["not_a_wav.wav", "text.wav", "zero_length.wav", "corrupt_header.wav",
                                  "corrupt_fmt.wav", "header_only.wav", "truncated.flac"])
def test_unusable_files_are_one_line_errors(tmp_path, name):
    data, needle = _bad_files(tmp_path)[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(AudioInputError) as err:
        check_call(open_call(path))
    assert needle in str(err.value)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("name", ["zero_length.wav", "corrupt_header.wav", "truncated.flac"])
def test_cli_exits_3_with_one_line_before_starting_anything(tmp_path, cli_env, name):
    data, needle = _bad_files(tmp_path)[name]
    path = tmp_path / name
    path.write_bytes(data)
    result = run_cli("run", str(path), "--out", str(tmp_path / "runs"), env=cli_env)
    assert_one_line_error(result, 3, needle)
    assert not (tmp_path / "runs").exists()


def test_truncated_wav_data_is_replayed_with_a_note(tmp_path):
    good = _wav_bytes(tmp_path, seconds=2.0)
    path = tmp_path / "cut.wav"
    path.write_bytes(good[: 44 + 16000])  # header promises 2 s, half a second is there
    assert wav_declared_data_bytes(path) == (64000, 16000)
    call = open_call(path)
    notes = check_call(call)
    assert len(notes) == 1 and "truncated" in notes[0] and "2.0 s" in notes[0] and "0.5 s" in notes[0]
    frames = list(iter_pipeline_frames(call))
    assert len(frames) == 25  # 0.5 s of 20 ms frames


def test_all_silence_is_noted(tmp_path):
    path = tmp_path / "silence.wav"
    sf.write(path, np.zeros(16000 * 2, np.int16), 16000, subtype="PCM_16")
    notes = check_call(open_call(path))
    assert notes == [f"{path.name}: the caller channel (0) is all silence: expect no turns"]


# --- every common rate, sample format and channel count --------------------------------------

@pytest.mark.parametrize("rate", [8000, 16000, 22050, 44100, 48000])
@pytest.mark.parametrize("subtype", ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT"])
def test_rates_and_sample_formats_become_the_same_16k_tone(tmp_path, rate, subtype):
    path = tmp_path / f"call_{rate}_{subtype}.wav"
    sf.write(path, tone(1.0, rate), rate, subtype=subtype)
    assert sf.info(str(path)).subtype == subtype
    fed = fed_samples(path)
    assert 50 <= len(fed) / 320 <= 51  # 1 s → 50 frames of 20 ms (+1 padded resampler tail)
    assert dominant_hz(fed[:16000]) == pytest.approx(TONE_HZ, abs=2)
    assert 0.4 < np.abs(fed).max() < 0.6  # the level survives: no 8-bit/24-bit scaling mistakes


@pytest.mark.parametrize("channels", [2, 4, 6, 8])
def test_the_caller_channel_of_a_multichannel_file(tmp_path, channels):
    caller = channels - 1
    data = np.zeros((48000, channels), np.float32)
    data[:, caller] = tone(1.0, 48000)
    for other in range(channels - 1):
        data[:, other] = tone(1.0, 48000, freq=1000.0 + 250 * other)
    path = tmp_path / f"call_{channels}ch.wav"
    sf.write(path, data, 48000, subtype="PCM_24")
    assert dominant_hz(fed_samples(path, caller)[:16000]) == pytest.approx(TONE_HZ, abs=2)
    assert dominant_hz(fed_samples(path, 0)[:16000]) == pytest.approx(1000.0, abs=2)


@pytest.mark.parametrize("fmt, ext", [("FLAC", "flac"), ("OGG", "ogg")])
def test_other_formats_libsndfile_reads(tmp_path, fmt, ext):
    path = tmp_path / f"call.{ext}"
    sf.write(path, tone(1.0, 44100), 44100, format=fmt)
    call = open_call(path)
    assert call.format == fmt
    assert dominant_hz(fed_samples(path)[:16000]) == pytest.approx(TONE_HZ, abs=2)


# --- a one-hour call: the source streams, memory stays flat -----------------------------------

def _write_noise(path, seconds: int, rate: int = 8000) -> None:
    rng = np.random.default_rng(0)
    with sf.SoundFile(path, "w", samplerate=rate, channels=1, subtype="PCM_16") as out:
        for _ in range(seconds // 60):  # written a minute at a time: the test itself stays small
            out.write((rng.standard_normal(rate * 60) * 0.1).astype(np.float32))


def _peak_bytes_while_streaming(path) -> tuple[int, int]:
    call = open_call(path)
    tracemalloc.start()
    try:
        check_call(call)
        frames = sum(1 for _ in iter_pipeline_frames(call))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, frames


def test_one_hour_call_streams_with_flat_memory(tmp_path):
    short, hour = tmp_path / "one_minute.wav", tmp_path / "one_hour.wav"
    _write_noise(short, 60)
    _write_noise(hour, 3600)
    short_peak_bytes, short_frames = _peak_bytes_while_streaming(short)
    hour_peak_bytes, hour_frames = _peak_bytes_while_streaming(hour)
    assert (short_frames, hour_frames) == (3000, 180_000)
    whole_call_bytes = 3600 * PIPELINE_SAMPLE_RATE * 2  # the hour as 16 kHz int16, if it were held
    assert hour_peak_bytes < whole_call_bytes / 20
    # Sixty times the audio, the same memory (within 20 % and 256 KiB of allocator noise).
    assert hour_peak_bytes <= short_peak_bytes * 1.2 + 256 * 1024
