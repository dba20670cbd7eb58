"""Speech edges against truth on the edge corpus (tests/edges_corpus.py): which detector, how close.

    PYTHONPATH=$PWD .venv/bin/python bench/speech_edges.py            # through the observer (what a trace gets)
    PYTHONPATH=$PWD .venv/bin/python bench/speech_edges.py --options  # + the detectors it was chosen over

Through the observer: every call fed as frames on a fake clock with a real WebRTC VAD
(tests/edges_harness.py); errors of the span's edges, of the VAD's own end (stop − stop_secs) and of
the bot onset. Detector-level comparison (--options): each detector's speech frames are grouped into runs (pauses under 100 ms
bridged, runs under 30 ms dropped); a caller line's edges are the first run start and the last run end
among the runs overlapping [truth start − 0.5 s, truth end + 0.5 s]. Errors are detector − truth (ms).
The end-to-end numbers (through the observer with a real WebRTC VAD) come from
tests/unit/test_audio_edges.py, which prints the same table shape.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from tests.edges_corpus import RATE, all_calls, pcm16
from voicetrace.capture.audio_edges import SpeechEdges

FRAME = RATE // 100


def energy_runs(audio: np.ndarray) -> list[tuple[float, float]]:
    det = SpeechEdges()
    pcm = pcm16(audio)
    for i in range(0, len(pcm), 640):
        det.feed(pcm[i:i + 640], RATE)
    return [(a / 1e9, b / 1e9) for a, b in det.all_runs()]


def frames_to_runs(speech: np.ndarray, frame_s: float, gap_frames: int = 10, min_frames: int = 3):
    runs, start, last = [], None, None
    for k, s in enumerate(speech):
        if s:
            if start is None:
                start = k
            elif k - last > gap_frames:
                if last + 1 - start >= min_frames:
                    runs.append((start * frame_s, (last + 1) * frame_s))
                start = k
            last = k
    if start is not None and last + 1 - start >= min_frames:
        runs.append((start * frame_s, (last + 1) * frame_s))
    return runs


def webrtc_runs(audio: np.ndarray, mode: int = 2) -> list[tuple[float, float]]:
    import webrtcvad

    vad = webrtcvad.Vad(mode)
    pcm = pcm16(audio)
    n = len(audio) // FRAME
    speech = np.array([vad.is_speech(pcm[k * FRAME * 2:(k + 1) * FRAME * 2], RATE) for k in range(n)])
    return frames_to_runs(speech, 0.01)


def silero_runs(audio: np.ndarray, threshold: float = 0.5) -> list[tuple[float, float]]:
    from pipecat.audio.vad.silero import SileroVADAnalyzer

    vad = SileroVADAnalyzer(sample_rate=RATE)
    vad.set_sample_rate(RATE)
    win = 512
    pcm = pcm16(audio)
    n = len(audio) // win
    conf = np.array([vad.voice_confidence(pcm[k * win * 2:(k + 1) * win * 2]) for k in range(n)])
    return frames_to_runs(conf > threshold, win / RATE, gap_frames=3, min_frames=1)


def line_errors(runs, lines) -> list[tuple[float, float]]:
    """(start error ms, end error ms) per truth line; NaN when no run overlaps the line."""
    out = []
    for i, (s, e) in enumerate(lines):
        lo = max(s - 0.5, (lines[i - 1][1] + s) / 2 if i else 0.0)
        hi = min(e + 0.5, (e + lines[i + 1][0]) / 2 if i + 1 < len(lines) else e + 0.5)
        hit = [r for r in runs if r[1] > lo and r[0] < hi]
        if not hit:
            out.append((np.nan, np.nan))
            continue
        out.append(((max(hit[0][0], lo) - s) * 1000, (min(hit[-1][1], hi) - e) * 1000))
    return out


def table(detectors: dict, out=sys.stdout) -> dict:
    calls = all_calls()
    results = {}
    for name, fn in detectors.items():
        for call in calls:
            errs = line_errors(fn(call.audio), call.lines)
            results.setdefault((name, call.corpus, call.kind), []).extend(errs)
    print(f"{'detector':<10} {'corpus':<8} {'audio':<6} {'lines':>5}  {'start err ms (min/median/max |max|)':<36} "
          f"{'end err ms (min/median/max |max|)':<36}", file=out)
    for (name, corpus, kind), errs in results.items():
        e = np.array(errs)
        missed = int(np.isnan(e[:, 0]).sum())
        cells = []
        for col in (0, 1):
            v = e[~np.isnan(e[:, col]), col]
            cells.append(f"{v.min():+6.0f} {np.median(v):+6.0f} {v.max():+6.0f}  |{np.abs(v).max():4.0f}|" if len(v) else "-")
        print(f"{name:<10} {corpus:<8} {kind:<6} {len(e):>5}  {cells[0]:<36} {cells[1]:<36}"
              + (f" missed {missed}" if missed else ""), file=out)
    return results


def observer_table(out=sys.stdout) -> None:
    from tests.edges_harness import measure

    groups: dict = {}
    for call in all_calls():
        for r in measure(call):
            groups.setdefault((call.corpus, call.kind), []).append(r)
    print(f"{'corpus':<8} {'audio':<6} {'turns':>5}  {'start err ms min/max':<22} {'end err ms min/max':<22} "
          f"{'VAD end err min/max':<22} {'bot onset |max|':<15} vad fallbacks", file=out)
    for (corpus, kind), rows in groups.items():
        s = np.array([r.start_err_ms for r in rows])
        e = np.array([r.end_err_ms for r in rows])
        v = np.array([r.vad_end_err_ms for r in rows])
        o = np.array([r.onset_err_ms for r in rows if r.onset_err_ms is not None])
        fallbacks = sum(r.start_source != "audio" or r.end_source != "audio" for r in rows)
        print(f"{corpus:<8} {kind:<6} {len(rows):>5}  {s.min():+7.0f} {s.max():+7.0f}{'':<7} {e.min():+7.0f} {e.max():+7.0f}"
              f"{'':<7} {v.min():+7.0f} {v.max():+7.0f}{'':<7} {np.abs(o).max():7.1f}{'':<8} {fallbacks}", file=out)


def _tone_music(n: int, level_dbfs: float, seed: int = 3) -> np.ndarray:
    """Hold-music stand-in: 400 ms notes of a three-partial chord, shaped, at ``level_dbfs`` RMS."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / RATE
    note = (t * 2.5).astype(int)
    base = np.array([220.0, 247.0, 262.0, 294.0, 330.0])[rng.integers(0, 5, note.max() + 1)][note]
    x = sum(np.sin(2 * np.pi * base * k * t) / k for k in (1, 1.5, 2))
    x *= 0.6 + 0.4 * np.sin(2 * np.pi * 2.5 * t) ** 2
    return (x / np.sqrt(np.mean(x * x)) * 10 ** (level_dbfs / 20)).astype(np.float32)


def _breath(n: int, level_dbfs: float, seed: int = 5) -> np.ndarray:
    """Breath stand-in: band-limited noise (0.3-2 kHz) with a rise-and-fall envelope."""
    rng = np.random.default_rng(seed)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    spec[(f < 300) | (f > 2000)] = 0
    x = np.fft.irfft(spec, n) * np.hanning(n)
    return (x / np.sqrt(np.mean(x * x)) * 10 ** (level_dbfs / 20)).astype(np.float32)


def failure_modes(out=sys.stdout) -> None:
    """Hold music right after a caller line, and an audible in-breath just before one (synthetic stand-ins)."""
    from tests.edges_corpus import Call, human_calls
    from tests.edges_harness import measure

    base = human_calls()[0]
    print("what the detector gets wrong (human_lines, line 3; error = edge − truth, ms):", file=out)
    for label, kind in (("hold music 1.5 s from 300 ms after the line", "music"),
                        ("in-breath 300 ms ending 100 ms before the line", "breath")):
        for level in (-45.0, -35.0, -25.0):
            audio = base.audio.copy()
            s, e = base.lines[2]
            if kind == "music":
                a = int((e + 0.3) * RATE)
                audio[a:a + int(1.5 * RATE)] += _tone_music(int(1.5 * RATE), level)
            else:
                a = int((s - 0.4) * RATE)
                audio[a:a + int(0.3 * RATE)] += _breath(int(0.3 * RATE), level)
            r = measure(Call(base.name, audio, base.lines, corpus="human"))[2]
            print(f"  {label} at {level:.0f} dBFS: start {r.start_err_ms:+.0f} ({r.start_source}), end "
                  f"{r.end_err_ms:+.0f} ({r.end_source}); VAD's own end {r.vad_end_err_ms:+.0f}", file=out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--options", action="store_true", help="also measure WebRTC VAD and Silero per-frame decisions")
    parser.add_argument("--failure-modes", action="store_true", help="also measure hold music and breath next to a line")
    args = parser.parse_args()
    from loguru import logger

    logger.remove()  # pipecat logs each Silero load
    observer_table()
    if args.options:
        print()
        table({"energy": energy_runs, "webrtc": webrtc_runs, "silero": silero_runs})
    if args.failure_modes:
        print()
        failure_modes()


if __name__ == "__main__":
    main()
