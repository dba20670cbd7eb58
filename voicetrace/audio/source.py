"""Read a call recording, check it, and stream it as 16 kHz mono 16-bit frames.

The file is streamed block by block (never loaded whole), resampled with soxr's streaming
resampler, so a one-hour call uses as little memory as a one-minute one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import soundfile as sf
import soxr

PIPELINE_SAMPLE_RATE = 16_000
FRAME_MS = 20
FRAME_SAMPLES = PIPELINE_SAMPLE_RATE * FRAME_MS // 1000
FRAME_BYTES = FRAME_SAMPLES * 2
_READ_BLOCK_SECONDS = 2


class AudioInputError(Exception):
    """A recording voicetrace cannot use; the message is one line for the user."""


@dataclass(frozen=True)
class CallAudio:
    path: Path
    sample_rate: int
    channels: int
    frames: int
    format: str
    subtype: str
    caller_channel: int

    @property
    def duration_ms(self) -> float:
        return self.frames * 1000.0 / self.sample_rate


def probe_audio_file(path: Path, error: type[Exception] | None = None):
    """libsndfile's description of ``path``, or ``error`` (AudioInputError) with a one-line reason."""
    error = error or AudioInputError
    if not path.exists():
        raise error(f"{path}: no such file")
    if path.is_dir():
        raise error(f"{path}: is a directory, expected an audio file")
    if path.stat().st_size == 0:
        raise error(f"{path}: is empty (0 bytes), expected an audio file")
    try:
        info = sf.info(str(path))
    except Exception as exc:  # libsndfile's message is already one line
        reason = str(exc).split("\n")[0].split(": ", 1)[-1]
        raise error(f"{path}: not a readable audio file (WAV, FLAC, OGG): {reason}") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise error(f"{path}: contains no audio")
    return info


def open_call(path: Path | str, caller_channel: int = 0) -> CallAudio:
    """Validate ``path`` and describe it; raises AudioInputError with a one-line reason."""
    path = Path(path)
    info = probe_audio_file(path)
    if not 0 <= caller_channel < info.channels:
        raise AudioInputError(
            f"{path}: has {info.channels} channel(s); caller channel {caller_channel} does not exist"
        )
    return CallAudio(
        path=path,
        sample_rate=int(info.samplerate),
        channels=int(info.channels),
        frames=int(info.frames),
        format=info.format,
        subtype=info.subtype,
        caller_channel=caller_channel,
    )


def _to_int16(samples: np.ndarray) -> np.ndarray:
    # libsndfile maps int16 to float as x / 32768: scale back by the same so 16-bit input is bit-exact.
    return np.clip(np.round(samples * 32768.0), -32768, 32767).astype(np.int16)


def iter_pipeline_frames(call: CallAudio) -> Iterator[bytes]:
    """Yield the caller channel as 20 ms frames of 16 kHz mono int16 PCM (last one padded)."""
    resampler = None
    if call.sample_rate != PIPELINE_SAMPLE_RATE:
        resampler = soxr.ResampleStream(call.sample_rate, PIPELINE_SAMPLE_RATE, 1, dtype="float32")
    pending = np.zeros(0, dtype=np.int16)
    block = call.sample_rate * _READ_BLOCK_SECONDS
    try:
        blocks = sf.blocks(str(call.path), blocksize=block, dtype="float32", always_2d=True)
        for chunk in blocks:
            mono = np.ascontiguousarray(chunk[:, call.caller_channel])
            if resampler is not None:
                mono = resampler.resample_chunk(mono)
            pending = np.concatenate([pending, _to_int16(mono)])
            whole = len(pending) // FRAME_SAMPLES * FRAME_SAMPLES
            for start in range(0, whole, FRAME_SAMPLES):
                yield pending[start : start + FRAME_SAMPLES].tobytes()
            pending = pending[whole:]
    except sf.LibsndfileError as exc:
        raise AudioInputError(f"{call.path}: audio data is corrupt or truncated: {exc}") from None
    if resampler is not None:
        tail = resampler.resample_chunk(np.zeros(0, np.float32), last=True)
        pending = np.concatenate([pending, _to_int16(tail)])
    for start in range(0, len(pending), FRAME_SAMPLES):
        frame = np.zeros(FRAME_SAMPLES, dtype=np.int16)
        piece = pending[start : start + FRAME_SAMPLES]
        frame[: len(piece)] = piece
        yield frame.tobytes()
