"""Record the caller and the bot on one call timeline and write bot.wav and call.wav.

Both tracks stream to disk as they are produced: the caller frame by frame as it is fed,
the bot chunk by chunk at the moment it plays, with silence filled in between.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

_BLOCK_SAMPLES = 16_000 * 10


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
        elif offset_samples < self.samples_written:
            # Overlap with what is already written (a chunk scheduled a hair early):
            # playback is sequential, so the chunk plays right after the previous one.
            pass
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


class CallRecorder:
    """Caller audio as fed plus bot audio as played, both at ``sample_rate``, on one timeline."""

    def __init__(self, run_dir: Path, sample_rate: int = 16_000) -> None:
        self.run_dir = Path(run_dir)
        self.sample_rate = sample_rate
        self._caller = _TrackWriter(self.run_dir / ".caller.wav", sample_rate)
        self._bot = _TrackWriter(self.run_dir / "bot.wav", sample_rate)
        self.bot_segments_ns: list[tuple[int, int]] = []
        self._closed = False

    def add_caller(self, offset_ns: int, pcm: bytes) -> None:
        self._caller.write_at(self._to_samples(offset_ns), np.frombuffer(pcm, dtype=np.int16))

    def add_bot(self, offset_ns: int, pcm: bytes, sample_rate: int) -> None:
        samples = np.frombuffer(pcm, dtype=np.int16)
        if sample_rate != self.sample_rate:
            import soxr

            samples = soxr.resample(samples, sample_rate, self.sample_rate)
        self._bot.write_at(self._to_samples(offset_ns), samples)
        duration_ns = len(samples) * 1_000_000_000 // self.sample_rate
        self.bot_segments_ns.append((offset_ns, offset_ns + duration_ns))

    def _to_samples(self, offset_ns: int) -> int:
        return max(0, round(offset_ns * self.sample_rate / 1_000_000_000))

    def close(self) -> None:
        """Pad both tracks to one length, write call.wav (caller left, bot right)."""
        if self._closed:
            return
        self._closed = True
        total = max(self._caller.samples_written, self._bot.samples_written)
        self._caller.close(total)
        self._bot.close(total)
        caller_path = self._caller.path
        with sf.SoundFile(str(caller_path)) as caller, sf.SoundFile(str(self._bot.path)) as bot, sf.SoundFile(
            str(self.run_dir / "call.wav"), "w", samplerate=self.sample_rate, channels=2, subtype="PCM_16"
        ) as out:
            while True:
                left = caller.read(_BLOCK_SAMPLES, dtype="int16")
                right = bot.read(_BLOCK_SAMPLES, dtype="int16")
                if len(left) == 0:
                    break
                out.write(np.column_stack([left, right[: len(left)]]))
        caller_path.unlink()
