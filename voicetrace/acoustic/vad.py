"""Energy voice activity detection on 10 ms frames (pure: frame levels in, segments out).

Why energy and not a model: the pipeline already decides speech with WebRTC VAD (or Silero) and
smart-turn; a check of its timings must not share their failure modes. A level threshold is
transparent (the segment ends at the last frame above it), works at any sample rate, resolves
10 ms, and runs through hours of audio in seconds. The threshold adapts per channel, between the
channel's noise floor and its speech level, so telephony hiss does not count as speech; a bot track
of exact digital zeros has no noise floor and the threshold rests on its speech level alone.

Hangover: pauses shorter than ``hangover_ms`` inside one speaker's speech do not split a segment;
the segment still ends at its last loud frame (the hangover never lengthens it). Blips shorter than
``min_speech_ms`` (clicks, breaths) are dropped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from voicetrace.acoustic.levels import FRAME_MS, SILENCE_DB


@dataclass(frozen=True)
class VadConfig:
    hangover_ms: float = 300.0
    """Silence shorter than this between loud frames stays inside the segment."""
    min_speech_ms: float = 60.0
    """Segments shorter than this (after the hangover merge) are dropped."""
    above_noise_db: float = 10.0
    """Threshold at least this far above the channel's noise floor (10th percentile level)."""
    below_speech_db: float = 30.0
    """Threshold at least this close to the channel's speech level (95th percentile of non-silent frames)."""
    floor_dbfs: float = -60.0
    """Threshold never below this."""
    extend_db: float = 12.0
    """Hysteresis: a segment's edges extend over neighbouring frames within this much under the threshold
    (soft onsets and word endings), never into the noise floor."""
    agent_extend_db: float = 0.0
    """The same for the agent (bot) channel: none, so its onset is the first audible frame — the rule the
    observer's bot onset uses (capture/bot_onset.py) — not a TTS voice's inaudible lead-in ramp."""

    def to_dict(self) -> dict:
        return asdict(self)


def _noise_db(levels_db: np.ndarray) -> float:
    return float(np.percentile(levels_db, 10)) if levels_db.size else SILENCE_DB


def threshold_db(levels_db: np.ndarray, config: VadConfig = VadConfig()) -> float:
    """The speech threshold for one channel's frame levels (dBFS)."""
    if levels_db.size == 0:
        return config.floor_dbfs
    noise = _noise_db(levels_db)
    sounding = levels_db[levels_db > SILENCE_DB + 1]
    speech = float(np.percentile(sounding, 95)) if sounding.size else config.floor_dbfs
    thr = max(noise + config.above_noise_db, speech - config.below_speech_db, config.floor_dbfs)
    # Noisy channel where the floor is close to the speech: stay a little under the speech level.
    return min(thr, speech - 6.0) if speech - 6.0 > noise else thr


def speech_segments(levels_db: np.ndarray, config: VadConfig = VadConfig(), frame_ms: int = FRAME_MS,
                    threshold: float | None = None) -> np.ndarray:
    """[[start_ms, end_ms], ...] of speech on one channel, in order (int64 milliseconds on 10 ms frames)."""
    thr = threshold_db(levels_db, config) if threshold is None else threshold
    loud = levels_db > thr
    if not loud.any():
        return np.zeros((0, 2), dtype=np.int64)
    soft = levels_db > max(thr - config.extend_db, _noise_db(levels_db) + 3.0)
    soft |= loud
    edges = np.diff(np.concatenate([[0], soft.astype(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)  # exclusive frame index
    # Only soft runs with a loud frame inside are speech (Schmitt trigger).
    loud_sum = np.concatenate([[0], np.cumsum(loud)])
    has_loud = loud_sum[ends] > loud_sum[starts]
    starts, ends = starts[has_loud], ends[has_loud]
    gap_frames = int(round(config.hangover_ms / frame_ms))
    keep = np.concatenate([[True], (starts[1:] - ends[:-1]) >= gap_frames])  # a run that starts a new segment
    seg_starts = starts[keep]
    seg_ends = ends[np.concatenate([keep[1:], [True]])]
    segs = np.column_stack([seg_starts, seg_ends]).astype(np.int64) * frame_ms
    long_enough = (segs[:, 1] - segs[:, 0]) >= config.min_speech_ms
    return segs[long_enough]
