"""A call recording as Ogg/Opus in memory, small enough to embed in a report (libsndfile encodes it).

Opus at libsndfile's compression level 0.95 is about 28 kbit/s for a 16 kHz stereo call (measured on
the sample calls), so five minutes of call are about 1.1 MB (1.4 MB as base64). Higher levels are smaller
but let one side leak into the other (0.97: a tone on one channel comes out 33 dB down on the other;
0.99 is close to mono); at 0.95 the sides stay apart. Opus needs 8, 12, 16,
24 or 48 kHz; anything else (and anything above 16 kHz: speech needs no more) is resampled to 16 kHz
as a stream. Samples stay on the recording's timeline: libsndfile writes Opus's pre-skip, so a decoder
gives back the same number of samples, in place.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from voicetrace.audio.file import open_audio, read_blocks

COMPRESSION_LEVEL = 0.95
"""libsndfile's Opus compression level (0 = largest, 1 = smallest): the smallest that keeps the sides apart."""
OPUS_RATES = (8_000, 12_000, 16_000)
"""Rates kept as they are; any other is resampled to 16 kHz (Opus's own 24/48 kHz would only add size)."""
BLOCK_S = 10.0


@dataclass(frozen=True)
class EncodedAudio:
    data: bytes
    """The Ogg/Opus file."""
    duration_s: float
    """The recording's length (the encoded file decodes to the same length)."""
    sample_rate: int
    channels: int


def encode_ogg_opus(path: Path, max_channels: int = 2) -> EncodedAudio:
    """The first ``max_channels`` channels of ``path`` as Ogg/Opus bytes (raises AudioInputError)."""
    audio = open_audio(path)
    channels = min(max_channels, audio.channels)
    rate = audio.sample_rate if audio.sample_rate in OPUS_RATES else 16_000
    resampler = (soxr.ResampleStream(audio.sample_rate, rate, channels, dtype="float32")
                 if rate != audio.sample_rate else None)
    out = io.BytesIO()
    with sf.SoundFile(out, "w", samplerate=rate, channels=channels, format="OGG", subtype="OPUS",
                      compression_level=COMPRESSION_LEVEL) as enc:
        for block in read_blocks(audio, BLOCK_S, list(range(channels))):
            block = np.ascontiguousarray(block)
            if resampler is not None:
                block = resampler.resample_chunk(block)
            if len(block):
                enc.write(block)
        if resampler is not None:
            tail = resampler.resample_chunk(np.zeros((0, channels), np.float32), last=True)
            if len(tail):
                enc.write(tail)
    return EncodedAudio(out.getvalue(), audio.duration_ms / 1000.0, rate, channels)
