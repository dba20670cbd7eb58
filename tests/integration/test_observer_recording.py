"""The observer's own recording (CallTrace(record_audio=True)) on the real reference pipeline agrees with
the replay's transport recording: same caller audio in the same place, every bot reply where it played.

The replay's call.wav is written by the file transports themselves (frame n at n × 20 ms; each bot chunk
at the moment it starts playing), so it is the truth the observer, which only sees pushed frames, is held to.
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import SAMPLES
from voicetrace.acoustic.runs import analyze_recording
from voicetrace.capture.audio_tap import CallAudioTap
from voicetrace.run.folder import RunFolder

pytestmark = pytest.mark.integration


def test_observer_recording_matches_the_transports_recording(tmp_path, monkeypatch):
    import voicetrace.run.call as run_call_module
    from voicetrace.run import RunOptions, run_call

    taps = []
    start, close = run_call_module.start_capture, run_call_module.close_capture

    def start_with_tap(folder, *args):
        trace = start(folder, *args)
        taps.append(CallAudioTap(RunFolder(folder.path / "observer")))
        trace.observer.audio_tap = taps[-1]  # what CallTrace(record_audio=True) wires, into a folder of its own
        return trace

    def close_with_tap(trace, result):
        close(trace, result)
        taps[-1].close()

    monkeypatch.setattr(run_call_module, "start_capture", start_with_tap)
    monkeypatch.setattr(run_call_module, "close_capture", close_with_tap)
    result = run_call(RunOptions(call_path=SAMPLES / "claim_status.wav", out_dir=tmp_path, run_id="it"))
    replay, observed = result.folder.call_recording, taps[0].folder.call_recording

    truth, rate = sf.read(str(replay), dtype="int16")
    mine, rate_mine = sf.read(str(observed), dtype="int16")
    assert rate_mine == rate and mine.shape[1] == 2
    n = min(len(truth), len(mine))
    assert abs(len(truth) - len(mine)) <= rate // 10  # the tail may differ by a few frames
    assert np.array_equal(mine[:n, 0], truth[:n, 0])  # the caller: sample for sample, in place

    expected = analyze_recording(replay).turns.dropna(subset=["agent_start_ms"])
    got = analyze_recording(observed).turns.dropna(subset=["agent_start_ms"])
    assert len(expected) == len(got) >= 3
    onset_error_ms = np.abs(got["agent_start_ms"].to_numpy() - expected["agent_start_ms"].to_numpy())
    end_error_ms = np.abs(got["agent_end_ms"].to_numpy() - expected["agent_end_ms"].to_numpy())
    assert onset_error_ms.max() <= 10 and end_error_ms.max() <= 10, (onset_error_ms, end_error_ms)
