"""When the bot became audible: the first 10 ms frame of played bot audio over the bot track's level.

The output transport announces bot speech (``BotStartedSpeakingFrame``) when it hands the first chunk
to the device, and a TTS voice such as Piper opens with tens of milliseconds of near-silence (a few
LSB, −95 dBFS) and a ramp: nobody hears that. The observer feeds this every audio chunk the output
transport played, in order; positions count from the announcement, so the onset is
``started_ns + (samples before the first audible frame) / rate``, whatever the chunking.

Audible: a frame's RMS over ``below_speech_db`` under the bot track's speech level (95th percentile of
the bot's loud frames so far; the same rule as the caller side), and never under ``floor_dbfs``;
before the bot has spoken at all, ``first_dbfs``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from voicetrace.capture.audio_edges import FRAME_MS, NS_PER_MS, LevelTrack


class BotOnset:
    def __init__(self, *, below_speech_db: float = 28.0, floor_dbfs: float = -55.0, first_dbfs: float = -40.0) -> None:
        self.below_speech_db = below_speech_db
        self.floor_dbfs = floor_dbfs
        self.first_dbfs = first_dbfs
        self._loud: deque[float] = deque(maxlen=3000)  # the bot's loud frame levels (30 s of speech)
        self._track: LevelTrack | None = None
        self._start_ns: int | None = None
        self._found = False

    def threshold_db(self) -> float:
        if len(self._loud) < 10:
            return self.first_dbfs
        speech = float(np.percentile(np.fromiter(self._loud, dtype=np.float64), 95))
        return max(speech - self.below_speech_db, self.floor_dbfs)

    def started(self, start_ns: int) -> None:
        """Bot speech announced at ``start_ns`` (monotonic): the next chunk played starts there."""
        self._track = LevelTrack()
        self._start_ns = start_ns
        self._found = False

    def feed(self, pcm: bytes, sample_rate: int, num_channels: int = 1) -> int | None:
        """One played chunk; the onset (monotonic ns) the first time a frame is audible, else None."""
        if self._track is None or self._start_ns is None:
            return None
        first = self._track.frames
        levels = self._track.feed(pcm, sample_rate, num_channels)
        thr = self.threshold_db()
        onset = None
        for i, level in enumerate(levels):
            if level > thr:
                if not self._found:
                    self._found = True
                    onset = self._start_ns + (first + i) * FRAME_MS * NS_PER_MS
                self._loud.append(float(level))
        return onset
