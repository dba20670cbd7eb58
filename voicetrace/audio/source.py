"""Read a call recording, check it, and stream it as 16 kHz mono 16-bit frames.

The file is streamed block by block (never loaded whole), resampled with soxr's streaming
resampler, so a one-hour call uses as little memory as a one-minute one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import soxr

from voicetrace.audio.file import AudioFile, AudioInputError, open_audio, read_blocks

PIPELINE_SAMPLE_RATE = 16_000
FRAME_MS = 20
FRAME_SAMPLES = PIPELINE_SAMPLE_RATE * FRAME_MS // 1000
FRAME_BYTES = FRAME_SAMPLES * 2
_READ_BLOCK_SECONDS = 2

__all__ = ["AudioInputError", "CallAudio", "open_call", "iter_pipeline_frames", "PIPELINE_SAMPLE_RATE",
           "FRAME_MS", "FRAME_SAMPLES", "FRAME_BYTES"]


@dataclass(frozen=True)
class CallAudio(AudioFile):
    """A call recording: an audio file and the channel that holds the caller."""

    caller_channel: int = 0


def open_call(path: Path | str, caller_channel: int = 0) -> CallAudio:
    """Validate ``path`` and describe it; raises AudioInputError with a one-line reason."""
    audio = open_audio(path)
    if not 0 <= caller_channel < audio.channels:
        raise AudioInputError(
            f"{audio.path}: has {audio.channels} channel(s); caller channel {caller_channel} does not exist"
        )
    return CallAudio(**vars(audio), caller_channel=caller_channel)


def _to_int16(samples: np.ndarray) -> np.ndarray:
    # libsndfile maps int16 to float as x / 32768: scale back by the same so 16-bit input is bit-exact.
    return np.clip(np.round(samples * 32768.0), -32768, 32767).astype(np.int16)


def iter_pipeline_frames(call: CallAudio) -> Iterator[bytes]:
    """Yield the caller channel as 20 ms frames of 16 kHz mono int16 PCM (last one padded)."""
    resampler = None
    if call.sample_rate != PIPELINE_SAMPLE_RATE:
        resampler = soxr.ResampleStream(call.sample_rate, PIPELINE_SAMPLE_RATE, 1, dtype="float32")
    pending = np.zeros(0, dtype=np.int16)
    for chunk in read_blocks(call, _READ_BLOCK_SECONDS, [call.caller_channel]):
        mono = np.ascontiguousarray(chunk[:, 0])
        if resampler is not None:
            mono = resampler.resample_chunk(mono)
        pending = np.concatenate([pending, _to_int16(mono)])
        whole = len(pending) // FRAME_SAMPLES * FRAME_SAMPLES
        for start in range(0, whole, FRAME_SAMPLES):
            yield pending[start : start + FRAME_SAMPLES].tobytes()
        pending = pending[whole:]
    if resampler is not None:
        tail = resampler.resample_chunk(np.zeros(0, np.float32), last=True)
        pending = np.concatenate([pending, _to_int16(tail)])
    for start in range(0, len(pending), FRAME_SAMPLES):
        frame = np.zeros(FRAME_SAMPLES, dtype=np.int16)
        piece = pending[start : start + FRAME_SAMPLES]
        frame[: len(piece)] = piece
        yield frame.tobytes()
