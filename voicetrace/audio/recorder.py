"""Record the caller and the bot on one call timeline and write the run folder's bot and call audio.

Both tracks stream to disk as they are produced: the caller frame by frame as it is fed,
the bot chunk by chunk at the moment it plays, with silence filled in between. Bot audio at
another rate goes through one streaming resampler per stretch of contiguous speech, so chunk
edges neither click nor drift (a one-shot resample per chunk would restart the filter each time).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from voicetrace.run.folder import RunFolder

_BLOCK_SAMPLES = 16_000 * 10
_CONTIGUOUS_NS = 1_000_000
"""A chunk starting within 1 ms of the previous one's end continues the same stretch of speech."""


class _TrackWriter:
    """A mono int16 track written in time order; gaps before a chunk become silence."""

    def __init__(self, path: Path, sample_rate: int) -> None:
        self.path = path
        self.sample_rate = sample_rate
        self._file = sf.SoundFile(str(path), "w", samplerate=sample_rate, channels=1, subtype="PCM_16")
        self.samples_written = 0

    def write_at(self, offset_samples: int, pcm: np.ndarray) -> None:
        if offset_samples > self.samples_written:
            self._write_silence(offset_samples - self.samples_written)
        # An offset before the end (a chunk scheduled a hair early) overlaps what is written:
        # playback is sequential, so the chunk plays right after the previous one.
        self.append(pcm)

    def append(self, pcm: np.ndarray) -> None:
        if len(pcm):
            self._file.write(pcm)
            self.samples_written += len(pcm)

    def _write_silence(self, count: int) -> None:
        while count > 0:
            n = min(count, _BLOCK_SAMPLES)
            self._file.write(np.zeros(n, dtype=np.int16))
            self.samples_written += n
            count -= n

    def close(self, total_samples: int) -> None:
        if total_samples > self.samples_written:
            self._write_silence(total_samples - self.samples_written)
        self._file.close()


class _BotStretch:
    """One stretch of contiguous bot audio at a rate other than the track's, resampled as a stream."""

    def __init__(self, in_rate: int, out_rate: int, end_ns: int) -> None:
        self.in_rate = in_rate
        self.end_ns = end_ns
        self._stream = soxr.ResampleStream(in_rate, out_rate, 1, dtype="int16")

    def resample(self, samples: np.ndarray) -> np.ndarray:
        return self._stream.resample_chunk(samples)

    def flush(self) -> np.ndarray:
        """The resampler's delayed tail (the last few milliseconds of the stretch)."""
        return self._stream.resample_chunk(np.zeros(0, np.int16), last=True)


class CallRecorder:
    """Caller audio as fed plus bot audio as played, both at ``sample_rate``, on one timeline."""

    def __init__(self, folder: RunFolder | Path, sample_rate: int = 16_000) -> None:
        self.folder = folder if isinstance(folder, RunFolder) else RunFolder(Path(folder))
        self.sample_rate = sample_rate
        self._caller = _TrackWriter(self.folder.caller_scratch, sample_rate)
        self._bot = _TrackWriter(self.folder.bot_audio, sample_rate)
        self._stretch: _BotStretch | None = None
        self.bot_segments_ns: list[tuple[int, int]] = []
        self._closed = False

    def add_caller(self, offset_ns: int, pcm: bytes) -> None:
        self._caller.write_at(self._to_samples(offset_ns), np.frombuffer(pcm, dtype=np.int16))

    def add_bot(self, offset_ns: int, pcm: bytes, sample_rate: int) -> None:
        samples = np.frombuffer(pcm, dtype=np.int16)
        duration_ns = len(samples) * 1_000_000_000 // sample_rate
        stretch = self._stretch
        continues = (stretch is not None and stretch.in_rate == sample_rate
                     and offset_ns - stretch.end_ns <= _CONTIGUOUS_NS)
        if not continues:
            self._end_stretch()
        if sample_rate == self.sample_rate:
            self._bot.write_at(self._to_samples(offset_ns), samples)
        elif continues:
            self._bot.append(stretch.resample(samples))
            stretch.end_ns = offset_ns + duration_ns
        else:
            self._stretch = _BotStretch(sample_rate, self.sample_rate, offset_ns + duration_ns)
            self._bot.write_at(self._to_samples(offset_ns), self._stretch.resample(samples))
        self.bot_segments_ns.append((offset_ns, offset_ns + duration_ns))

    def _end_stretch(self) -> None:
        if self._stretch is not None:
            self._bot.append(self._stretch.flush())
            self._stretch = None

    def _to_samples(self, offset_ns: int) -> int:
        return max(0, round(offset_ns * self.sample_rate / 1_000_000_000))

    def close(self) -> None:
        """Pad both tracks to one length, write the call recording (caller left, bot right)."""
        if self._closed:
            return
        self._closed = True
        self._end_stretch()
        total = max(self._caller.samples_written, self._bot.samples_written)
        self._caller.close(total)
        self._bot.close(total)
        caller_path = self._caller.path
        with sf.SoundFile(str(caller_path)) as caller, sf.SoundFile(str(self._bot.path)) as bot, sf.SoundFile(
            str(self.folder.call_recording), "w", samplerate=self.sample_rate, channels=2, subtype="PCM_16"
        ) as out:
            while True:
                left = caller.read(_BLOCK_SAMPLES, dtype="int16")
                right = bot.read(_BLOCK_SAMPLES, dtype="int16")
                if len(left) == 0:
                    break
                out.write(np.column_stack([left, right[: len(left)]]))
        caller_path.unlink()
