"""An audio file on disk: probe it (one-line errors), describe it, read it block by block.

The one reader of recordings: the replay's source, the pre-run check and the acoustic levels all
stream through ``read_blocks``, so a corrupt file fails with the same line wherever it is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import soundfile as sf

from voicetrace.errors import InputError


class AudioInputError(InputError):
    """A recording voicetrace cannot use; the message is one line for the user (exit 3)."""


@dataclass(frozen=True)
class AudioFile:
    path: Path
    sample_rate: int
    channels: int
    frames: int
    format: str
    subtype: str

    @property
    def duration_ms(self) -> float:
        return self.frames * 1000.0 / self.sample_rate


def libsndfile_reason(exc: Exception) -> str:
    """libsndfile's complaint as a short clause (its messages carry a prefix and sometimes lines)."""
    text = str(exc).split("\n")[0]
    text = text.split(": ", 1)[-1] if ": " in text else text
    return text.replace("Error : ", "").strip().rstrip(".") or type(exc).__name__


def open_audio(path: Path | str) -> AudioFile:
    """Describe ``path``; AudioInputError with a one-line reason when it is not usable audio."""
    path = Path(path)
    if not path.exists():
        raise AudioInputError(f"{path}: no such file")
    if path.is_dir():
        raise AudioInputError(f"{path}: is a directory, expected an audio file")
    if path.stat().st_size == 0:
        raise AudioInputError(f"{path}: is empty (0 bytes), expected an audio file")
    try:
        info = sf.info(str(path))
    except Exception as exc:  # libsndfile's message is already one line
        reason = str(exc).split("\n")[0].split(": ", 1)[-1]
        raise AudioInputError(f"{path}: not a readable audio file (WAV, FLAC, OGG): {reason}") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise AudioInputError(f"{path}: contains no audio")
    return AudioFile(path, int(info.samplerate), int(info.channels), int(info.frames), info.format, info.subtype)


def read_blocks(audio: AudioFile, block_s: float, channels: list[int] | None = None) -> Iterator[np.ndarray]:
    """float32 blocks of shape (samples, channels) — ``channels`` selected, all when None — never the
    whole file; data that does not decode raises AudioInputError saying how far decoding got."""
    decoded = 0
    try:
        for block in sf.blocks(str(audio.path), blocksize=max(1, int(audio.sample_rate * block_s)),
                               dtype="float32", always_2d=True):
            decoded += len(block)
            yield block if channels is None else block[:, channels]
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise AudioInputError(
            f"{audio.path}: audio data is corrupt or truncated after {decoded / audio.sample_rate:.1f} s "
            f"({libsndfile_reason(exc)})"
        ) from None
