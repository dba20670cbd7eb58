"""The report's embedded call audio, without a browser: the Opus encoding keeps both sides in place on
the call's timeline, and the page carries the recording (or says in one line that there is none)."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import orjson
import soundfile as sf

from voicetrace.audio.compress import encode_ogg_opus
from voicetrace.render.html import build_page
from voicetrace.render.html_audio import NO_AUDIO_NOTE
from voicetrace.report import build_report
from voicetrace.run.folder import RunFolder
from voicetrace.traces.files import read_trace_files

from tests.report.synth import Turn, call_spans, write_trace

RATE = 16_000


def _stereo_call(path, seconds: float, rate: int, caller: tuple, bot: tuple) -> None:
    """Silence with a tone burst on the caller (left) and one on the bot (right), each (start_s, end_s)."""
    t = np.arange(int(seconds * rate)) / rate
    audio = np.zeros((len(t), 2), np.float32)
    for ch, (a, b), hz in ((0, caller, 440.0), (1, bot, 660.0)):
        on = (t >= a) & (t < b)
        audio[on, ch] = 0.5 * np.sin(2 * np.pi * hz * t[on])
    sf.write(str(path), audio, rate, subtype="PCM_16")


def _burst_s(channel: np.ndarray, rate: int) -> tuple[float, float]:
    """First and last 5 ms window of a channel louder than −30 dBFS."""
    win = rate // 200
    frames = channel[: len(channel) // win * win].reshape(-1, win)
    loud = np.flatnonzero(np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1)) > 10 ** (-30 / 20))
    return loud[0] * win / rate, (loud[-1] + 1) * win / rate


def test_opus_keeps_caller_and_bot_on_their_channels_and_times(tmp_path):
    wav = tmp_path / "call.wav"
    _stereo_call(wav, 12.0, RATE, caller=(1.0, 3.0), bot=(4.2, 6.0))
    enc = encode_ogg_opus(wav)
    assert enc.data[:4] == b"OggS" and enc.channels == 2 and enc.sample_rate == RATE
    assert abs(enc.duration_s - 12.0) < 1e-9
    decoded, rate = sf.read(io.BytesIO(enc.data), dtype="float32")
    assert sf.info(io.BytesIO(enc.data)).subtype == "OPUS"
    assert len(decoded) == 12 * RATE  # same length: decoders drop the pre-skip
    for ch, (a, b) in ((0, (1.0, 3.0)), (1, (4.2, 6.0))):
        start, end = _burst_s(decoded[:, ch], rate)
        assert abs(start - a) <= 0.005 and abs(end - b) <= 0.005, (ch, start, end)
        other = decoded[int((a + 0.1) * rate):int((b - 0.1) * rate), 1 - ch]
        assert np.sqrt(np.mean(other.astype(np.float64) ** 2)) < 10 ** (-60 / 20)  # no leak into the other side
    assert len(enc.data) < 12 * 4_000  # ≤ 32 kbit/s: a 5-minute call stays near 1 MB


def test_other_rates_are_resampled_in_place(tmp_path):
    wav = tmp_path / "call.wav"
    _stereo_call(wav, 5.0, 44_100, caller=(0.5, 1.5), bot=(2.0, 3.0))
    enc = encode_ogg_opus(wav)
    decoded, rate = sf.read(io.BytesIO(enc.data), dtype="float32")
    assert rate == RATE and abs(len(decoded) - 5 * RATE) <= 2
    start, _ = _burst_s(decoded[:, 1], rate)
    assert abs(start - 2.0) <= 0.005


def _run_folder(tmp_path, with_recording: bool) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    write_trace(folder.trace, [call_spans([Turn(at=2500), Turn(at=7000)], end_ms=11_000)])
    if with_recording:
        _stereo_call(folder.call_recording, 11.0, RATE, caller=(1.0, 2.5), bot=(3.3, 5.0))
    return folder


def _page_data(page: str) -> dict:
    return orjson.loads(re.search(r'<script type="application/json" id="voicetrace-data">(.*?)</script>', page,
                                  re.S).group(1))


def test_a_run_folder_report_embeds_its_recording_with_each_turns_place(tmp_path):
    folder = _run_folder(tmp_path, with_recording=True)
    page = build_page(build_report(read_trace_files([folder.path])))
    sources = re.findall(r'<audio id="audio-0"[^>]* src="data:audio/ogg;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(sources) == 1
    assert sf.info(io.BytesIO(base64.b64decode(sources[0]))).frames == 11 * RATE
    data = _page_data(page)
    assert [c["duration_s"] for c in data["audio"]["calls"]] == [11.0]
    places = sorted(w["audio"]["origin_s"] for w in data["waterfalls"])
    assert places == [2.5, 7.0]  # each turn's speech end, from the conversation's start
    for w in data["waterfalls"]:
        shapes = w["layout"]["shapes"]
        assert shapes[w["audio"]["playhead"]]["name"] == "playhead"
        assert w["data"][0]["customdata"] == w["data"][0]["base"]
    assert NO_AUDIO_NOTE not in page


def test_without_a_recording_the_page_says_so_once(tmp_path):
    folder = _run_folder(tmp_path, with_recording=False)
    page = build_page(build_report(read_trace_files([folder.path])))
    assert page.count(NO_AUDIO_NOTE) == 1
    assert "<audio" not in page and _page_data(page)["audio"]["calls"] == []
    assert all("audio" not in w for w in _page_data(page)["waterfalls"])


def test_an_unreadable_recording_is_one_line_and_the_report_stands(tmp_path):
    folder = _run_folder(tmp_path, with_recording=False)
    folder.call_recording.write_bytes(b"RIFF\x00\x00not audio")
    page = build_page(build_report(read_trace_files([folder.path])))
    assert "<audio" not in page
    assert len(re.findall(r"not playable here: [^<]*call\.wav", page)) == 1
    assert len(_page_data(page)["waterfalls"]) == 2
