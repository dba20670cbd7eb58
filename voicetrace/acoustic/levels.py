"""Stream a recording → per-channel loudness of consecutive 10 ms frames (dBFS).

The file is read block by block (never whole); frame k covers samples
[floor(k·rate/100), floor((k+1)·rate/100)), so any sample rate (8 kHz, 22.05 kHz, 44.1 kHz, ...)
gets exact 10 ms frames without resampling. A one-hour call gives 360 000 frames per channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicetrace.audio.file import AudioFile, AudioInputError, open_audio, read_blocks

FRAME_MS = 10
FRAMES_PER_S = 1000 // FRAME_MS
SILENCE_DB = -120.0
"""Level given to a frame of exact digital silence (log of zero)."""
_BLOCK_S = 10


@dataclass(frozen=True)
class Levels:
    """``db[channel, frame]``: RMS level of each 10 ms frame in dBFS (digital silence = SILENCE_DB)."""

    db: np.ndarray
    sample_rate: int
    duration_ms: float
    frame_ms: int = FRAME_MS


def recording_info(path: Path | str, min_channels: int = 1) -> AudioFile:
    """The recording's description; AudioInputError (one line) when unusable or short of channels."""
    info = open_audio(path)
    if info.channels < min_channels:
        raise AudioInputError(
            f"{info.path}: has {info.channels} channel(s); {min_channels} are needed (caller and agent on separate channels)")
    return info


def _frame_bounds(first_frame: int, sample_rate: int, upto_sample: int) -> np.ndarray:
    """Sample index where each frame from ``first_frame`` starts, for frames ending at or before ``upto_sample``."""
    last = (upto_sample * FRAMES_PER_S) // sample_rate  # frames fully inside [0, upto_sample)
    ks = np.arange(first_frame, last + 1, dtype=np.int64)
    return ks * sample_rate // FRAMES_PER_S


def frame_levels(info: AudioFile, channels: list[int]) -> Levels:
    """RMS dBFS of every 10 ms frame of ``channels``, streamed from the file (last partial frame kept)."""
    rate = info.sample_rate
    out: list[np.ndarray] = []
    pending = np.zeros((0, len(channels)), dtype=np.float64)
    pending_start = 0  # sample index of pending[0]
    next_frame = 0
    for block in read_blocks(info, _BLOCK_S, channels):
        pending = np.concatenate([pending, block.astype(np.float64)])
        bounds = _frame_bounds(next_frame, rate, pending_start + len(pending))
        if len(bounds) < 2:
            continue
        out.append(_levels_between(pending, bounds - pending_start))
        next_frame += len(bounds) - 1
        cut = int(bounds[-1] - pending_start)
        pending, pending_start = pending[cut:], int(bounds[-1])
    if len(pending):
        out.append(_levels_between(pending, np.array([0, len(pending)])))
    db = np.concatenate(out, axis=1) if out else np.zeros((len(channels), 0))
    return Levels(db=db, sample_rate=rate, duration_ms=info.duration_ms)


def _levels_between(samples: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """dBFS per channel of samples[bounds[i]:bounds[i+1]]; shape (channels, len(bounds) - 1)."""
    energy = np.add.reduceat(samples * samples, bounds[:-1], axis=0)  # exact 0 for digital silence
    counts = np.diff(bounds)[:, None].astype(np.float64)
    with np.errstate(divide="ignore"):
        db = 10.0 * np.log10(energy / counts)
    return np.maximum(db, SILENCE_DB).T
