"""Speech edges from the audio itself, live: a streaming energy detector on 10 ms frames.

The observer feeds it every caller audio frame the input transport pushes (and, separately, every
bot audio frame the output transport plays), so it works in any pipecat pipeline, live or replayed.
It knows nothing of turns: it keeps *runs* of speech in audio time (nanoseconds of audio since the
first sample it was fed); the turn tracker asks it, at each VAD change, where the speech really
started or ended (``onset_near`` / ``end_before``).

Why energy against an adaptive noise floor (BENCHMARKS.md, "Speech edges"): on the corpus of sample
calls and real human recordings it places edges within a frame or two of the truth, where the VAD's
own per-frame decisions carry its hangover (WebRTC) or a 32 ms window and smoothing (Silero); it is
independent of the turn-taking VAD, costs a few microseconds a frame, and needs no model.

Per frame: level = RMS in dBFS. The noise floor is the 10th percentile and the speech level the 95th
percentile of the levels of the last ``window_s`` (updated every 100 ms); a frame is loud over
``max(noise + above_noise_db, speech − below_speech_db, floor_dbfs)``. A run starts at a loud frame
(extended back over frames within ``extend_db`` under the threshold: soft onsets), holds through
pauses shorter than ``hangover_ms`` and ends at its last loud frame (extended forward the same way);
runs with fewer than ``min_loud_ms`` of loud frames (clicks) are dropped. What it gets wrong, measured
(README, "From the audio"): noise over the threshold counts as speech (music on hold, a cough, a loud
breath), and word endings under the noise floor are lost, so in noise a speech end comes early.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

FRAME_MS = 10
NS_PER_MS = 1_000_000
SILENCE_DBFS = -120.0
EDGE_WINDOW_NS = 1_000 * NS_PER_MS
"""An audio edge further than this before the VAD's own estimate is not this turn's: the VAD's is kept."""


@dataclass(frozen=True)
class EdgeConfig:
    above_noise_db: float = 12.0
    """A loud frame is at least this far over the noise floor."""
    below_speech_db: float = 28.0
    """... and within this much of the speech level (so hiss under loud speech is not speech)."""
    floor_dbfs: float = -45.0
    """... and never under this level."""
    extend_db: float = 0.0
    """Run edges extend over neighbouring frames up to this much under the threshold (never into the floor)."""
    hangover_ms: float = 150.0
    """A pause shorter than this stays inside a run."""
    min_loud_ms: float = 10.0
    """A run needs this much loud audio. One frame: a plosive's release after its closure is speech."""
    window_s: float = 20.0
    """Noise floor and speech level come from the last this many seconds."""


class LevelTrack:
    """One audio stream cut into exact 10 ms frames (any rate, any chunking) → frame levels (dBFS)."""

    def __init__(self) -> None:
        self._pending = np.zeros(0, np.float64)
        self._rate = 0
        self.frames = 0
        """Frames measured so far; frame k covers audio [k·10 ms, (k+1)·10 ms)."""
        self.samples = 0
        """Samples fed so far (at the stream's rate)."""

    def feed(self, pcm: bytes, sample_rate: int, num_channels: int = 1) -> np.ndarray:
        """Levels of the whole frames completed by this chunk of 16-bit PCM."""
        x = np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768.0
        if num_channels > 1:
            x = x[: len(x) // num_channels * num_channels].reshape(-1, num_channels).mean(axis=1)
        if sample_rate != self._rate:
            self._rate = sample_rate
        self.samples += len(x)
        self._pending = np.concatenate([self._pending, x])
        # Frame boundaries at exact sample positions: frame k starts at floor(k·rate/100).
        start = self.frames * sample_rate // 100
        bounds = []
        k = self.frames
        while (k + 1) * sample_rate // 100 - start <= len(self._pending):
            bounds.append((k * sample_rate // 100 - start, (k + 1) * sample_rate // 100 - start))
            k += 1
        if not bounds:
            return np.zeros(0)
        levels = np.array([_dbfs(self._pending[a:b]) for a, b in bounds])
        self._pending = self._pending[bounds[-1][1]:]
        self.frames = k
        return levels

    @property
    def position_ns(self) -> int:
        return self.samples * 1_000_000_000 // self._rate if self._rate else 0


def _dbfs(x: np.ndarray) -> float:
    power = float(np.mean(x * x)) if len(x) else 0.0
    return max(10.0 * np.log10(power), SILENCE_DBFS) if power > 0 else SILENCE_DBFS


class SpeechEdges:
    """Runs of speech in one audio stream, found as it is fed (audio-time nanoseconds)."""

    def __init__(self, config: EdgeConfig = EdgeConfig()) -> None:
        self.config = config
        self.track = LevelTrack()
        self.runs: list[tuple[int, int]] = []
        """Closed runs: (start_ns, end_ns) in audio time, in order."""
        self._history: deque[float] = deque(maxlen=int(config.window_s * 1000 / FRAME_MS))
        self._recent: deque[float] = deque(maxlen=64)  # levels of the last frames, for extending an onset back
        self._noise = SILENCE_DBFS
        self._speech = SILENCE_DBFS
        self._run_start: int | None = None  # frame index
        self._last_loud = 0
        self._tail = 0  # exclusive end frame of the run so far (last loud frame, extended over soft ones)
        self._loud_frames = 0
        self._hangover = max(1, int(round(config.hangover_ms / FRAME_MS)))
        self._min_loud = max(1, int(round(config.min_loud_ms / FRAME_MS)))

    # --- intake ---------------------------------------------------------------------------
    def feed(self, pcm: bytes, sample_rate: int, num_channels: int = 1) -> None:
        first = self.track.frames
        for i, level in enumerate(self.track.feed(pcm, sample_rate, num_channels)):
            self._frame(first + i, float(level))

    @property
    def position_ns(self) -> int:
        """Audio time fed so far."""
        return self.track.position_ns

    def threshold_db(self) -> float:
        c = self.config
        return max(self._noise + c.above_noise_db, self._speech - c.below_speech_db, c.floor_dbfs)

    def _soft_db(self, threshold: float) -> float:
        return max(threshold - self.config.extend_db, self._noise + 3.0)

    def _frame(self, k: int, level: float) -> None:
        self._history.append(level)
        if k % 10 == 0:
            self._levels_update()
        thr = self.threshold_db()
        soft = self._soft_db(thr)
        loud = level > thr
        if self._run_start is None:
            if loud:
                start = k
                for back in reversed(self._recent):  # soft onset: frames just under the threshold
                    if back <= soft or start <= (self.runs[-1][1] // (FRAME_MS * NS_PER_MS) if self.runs else 0):
                        break
                    start -= 1
                self._run_start, self._last_loud, self._tail, self._loud_frames = start, k, k + 1, 1
        else:
            if loud:
                self._last_loud, self._tail = k, k + 1
                self._loud_frames += 1
            elif level > soft and self._tail == k:
                self._tail = k + 1  # a word ending fading out, still over the soft level
            if k - self._last_loud >= self._hangover:
                self._close()
        self._recent.append(level)

    def _levels_update(self) -> None:
        levels = np.fromiter(self._history, dtype=np.float64)
        self._noise = float(np.percentile(levels, 10))
        sounding = levels[levels > SILENCE_DBFS + 1]
        self._speech = float(np.percentile(sounding, 95)) if sounding.size else SILENCE_DBFS

    def _close(self) -> None:
        if self._run_start is not None and self._loud_frames >= self._min_loud:
            self.runs.append((self._run_start * FRAME_MS * NS_PER_MS, self._tail * FRAME_MS * NS_PER_MS))
        self._run_start = None

    def open_run(self) -> tuple[int, int] | None:
        """The run still going on (start_ns, end so far), if any and long enough to count."""
        if self._run_start is None or self._loud_frames < self._min_loud:
            return None
        return self._run_start * FRAME_MS * NS_PER_MS, self._tail * FRAME_MS * NS_PER_MS

    def all_runs(self) -> list[tuple[int, int]]:
        current = self.open_run()
        return self.runs + ([current] if current else [])

    # --- questions the turn tracker asks ----------------------------------------------------
    def onset_near(self, declared_ns: int, after_ns: int, merge_gap_ns: int) -> int | None:
        """Where speech that a VAD declared at audio time ``declared_ns`` began: the start of the last
        run starting before it, walked back over runs less than ``merge_gap_ns`` apart, never before
        ``after_ns`` (the previous turn's end). None: no such run, or it began before ``after_ns``."""
        runs = [r for r in self.all_runs() if r[0] <= declared_ns and r[1] > after_ns]
        if not runs:
            return None
        i = len(runs) - 1
        while i > 0 and runs[i][0] - runs[i - 1][1] < merge_gap_ns and runs[i - 1][0] >= after_ns:
            i -= 1
        return runs[i][0] if runs[i][0] >= after_ns else None

    def end_before(self, limit_ns: int, after_ns: int) -> int | None:
        """The end of the last speech run that started before audio time ``limit_ns``, if it ended by
        then and after ``after_ns``; None when speech was still going on at ``limit_ns`` (the detector
        hears speech where the VAD heard silence) or no run fits."""
        for start, end in reversed(self.all_runs()):
            if start >= limit_ns:
                continue
            if end > limit_ns:
                return None
            return end if end > after_ns else None
        return None


class CallerEdges:
    """The caller's audio as the input transport pushed it, on the run's monotonic clock.

    Audio time maps to the clock through one anchor: the earliest (push time − audio position) seen.
    Audio never arrives before it exists, so the earliest is the best estimate of when sample 0 was
    (a replay feeds frame n at exactly n frames after call time zero; a live transport adds only its
    least delay), and a pipeline running behind the audio moves no edge.
    """

    def __init__(self, config: EdgeConfig = EdgeConfig()) -> None:
        self.edges = SpeechEdges(config)
        self.anchor_ns: int | None = None
        self.frames = 0

    def feed(self, pcm: bytes, sample_rate: int, num_channels: int, pushed_ns: int) -> None:
        anchor = pushed_ns - self.edges.position_ns
        self.anchor_ns = anchor if self.anchor_ns is None else min(self.anchor_ns, anchor)
        self.edges.feed(pcm, sample_rate, num_channels)
        self.frames += 1

    @property
    def live(self) -> bool:
        return self.anchor_ns is not None

    def to_audio(self, mono_ns: int) -> int:
        return mono_ns - (self.anchor_ns or 0)

    def to_mono(self, audio_ns: int) -> int:
        return audio_ns + (self.anchor_ns or 0)

    def speech_onset(self, declared_ns: int, vad_onset_ns: int, previous_end_ns: int | None) -> tuple[int, str]:
        """(onset, "audio") behind a VAD start declared at ``declared_ns`` (monotonic, audio position when
        known), never before the previous turn's end; else (the VAD's own onset, "vad")."""
        if self.live:
            after = vad_onset_ns - EDGE_WINDOW_NS
            if previous_end_ns is not None:
                after = max(after, previous_end_ns)
            onset = self.onset_ns(declared_ns, after_ns=after)
            if onset is not None:
                return onset, "audio"
        return vad_onset_ns, "vad"

    def speech_end(self, declared_ns: int, vad_end_ns: int, start_ns: int) -> tuple[int, str]:
        """(end, "audio") of the speech before a VAD stop declared at ``declared_ns``; else (the VAD's, "vad")."""
        if self.live:
            end = self.end_ns(declared_ns, after_ns=start_ns)
            if end is not None and end >= vad_end_ns - EDGE_WINDOW_NS:
                return end, "audio"
        return vad_end_ns, "vad"

    def onset_ns(self, declared_ns: int, after_ns: int, merge_gap_ns: int = 300 * NS_PER_MS) -> int | None:
        """Speech onset (monotonic) behind a VAD start whose audio position was ``declared_ns``."""
        found = self.edges.onset_near(self.to_audio(declared_ns), self.to_audio(after_ns), merge_gap_ns)
        return None if found is None else self.to_mono(found)

    def end_ns(self, limit_ns: int, after_ns: int) -> int | None:
        """Speech end (monotonic) before a VAD stop whose audio position was ``limit_ns``."""
        found = self.edges.end_before(self.to_audio(limit_ns), self.to_audio(after_ns))
        return None if found is None else self.to_mono(found)
