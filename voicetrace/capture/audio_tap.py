"""Record a live call's audio from the frames the observer sees: caller in, bot out, on the call's timeline.

Opt-in (``CallTrace(..., record_audio=True)``): a call recording is personal data. What is recorded:

- caller: every ``InputAudioRawFrame`` the input transport pushes (the audio the pipeline hears);
- bot: every ``OutputAudioRawFrame`` the output transport pushes on — pipecat's output transport does
  that only after ``write_audio_frame`` returned, i.e. once the chunk was played (or sent), so a chunk is
  placed one chunk-duration before its push. Chunks dropped by an interruption never played and are not
  recorded.

Offsets are from call time zero (the conversation span's start), so span time − conversation start is a
position in call.wav, as in a replay. Frames of one side follow each other sample by sample (no gaps from
scheduling jitter); a frame arriving later than the end of what is written — by more than ``RESYNC_NS``
(caller) or ``BOT_RESYNC_NS`` (bot) — starts after silence at its own time (a paused transport, dropped
frames, a pause in or between replies).
The files are a run folder's (voicetrace.audio.recorder.CallRecorder): call.wav (caller left, bot
right) and bot.wav, written as the call goes.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import soxr
from pipecat.frames.frames import InputAudioRawFrame, OutputAudioRawFrame
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport

from voicetrace.audio.recorder import CallRecorder
from voicetrace.run.folder import RunFolder

log = logging.getLogger(__name__)

CALLER, BOT = "caller", "bot"
RESYNC_NS = 1_000_000_000
"""Caller audio arriving this much later than the end of its track is placed at its own time, after silence.

Large on purpose: a caller's audio is a continuous stream, so its sample count is the exact clock and
its arrival time only an upper bound. A loaded pipeline (or a network burst) delivers frames late and
then catches up; placing them at their arrival would shift all later audio by every stall (seen on a
loaded 2-core replay). Only a gap this long means audio really stopped coming (a paused client)."""
BOT_RESYNC_NS = 5_000_000
"""A bot chunk that started playing this much after the previous one ended follows a real pause (between
sentences, while TTS catches up): placed at its own time. Measured on the reference pipeline, a 40 ms
window moved reply ends 10–30 ms early."""
DEFAULT_RATE = 16_000
"""The recording's rate when the bot speaks before any caller audio arrives (else the caller's rate)."""


def _mono_int16(frame) -> np.ndarray:
    samples = np.frombuffer(frame.audio, dtype=np.int16)
    channels = max(1, int(frame.num_channels or 1))
    return samples if channels == 1 else samples[: len(samples) // channels * channels].reshape(-1, channels)[:, 0]


class CallAudioTap:
    """Caller and bot audio frames → the run folder's call.wav, placed on the call's timeline."""

    def __init__(self, folder: RunFolder | Path) -> None:
        self.folder = folder if isinstance(folder, RunFolder) else RunFolder(Path(folder))
        self.recorder: CallRecorder | None = None
        self._caller_samples = 0
        self._caller_resampler = None
        self._bot_end_ns: int | None = None
        self.closed = False

    @staticmethod
    def side_of(frame, source) -> str | None:
        """CALLER, BOT, or None for a frame this tap does not record."""
        if isinstance(frame, InputAudioRawFrame) and isinstance(source, BaseInputTransport):
            return CALLER
        if isinstance(frame, OutputAudioRawFrame) and isinstance(source, BaseOutputTransport):
            return BOT
        return None

    def add(self, side: str, frame, offset_ns: int) -> None:
        """A frame pushed ``offset_ns`` after call time zero."""
        if self.closed or not frame.audio:
            return
        pcm = _mono_int16(frame)
        if self.recorder is None:
            self.folder.path.mkdir(parents=True, exist_ok=True)
            self.recorder = CallRecorder(self.folder, frame.sample_rate if side == CALLER else DEFAULT_RATE)
        if side == CALLER:
            self._add_caller(pcm, frame.sample_rate, offset_ns)
        else:
            self._add_bot(pcm, frame.sample_rate, offset_ns)

    def _add_caller(self, pcm: np.ndarray, rate: int, offset_ns: int) -> None:
        out_rate = self.recorder.sample_rate
        if rate != out_rate:
            if self._caller_resampler is None or self._caller_resampler[0] != rate:
                self._caller_resampler = (rate, soxr.ResampleStream(rate, out_rate, 1, dtype="int16"))
            pcm = self._caller_resampler[1].resample_chunk(pcm)
        at = round(offset_ns * out_rate / 1_000_000_000)
        if at <= self._caller_samples + RESYNC_NS * out_rate // 1_000_000_000:
            at = self._caller_samples  # the next samples of the same stream
        self.recorder.add_caller(at * 1_000_000_000 // out_rate, pcm.tobytes())  # the recorder rounds back to `at`
        self._caller_samples = at + len(pcm)

    def _add_bot(self, pcm: np.ndarray, rate: int, pushed_ns: int) -> None:
        duration_ns = len(pcm) * 1_000_000_000 // rate
        started_ns = pushed_ns - duration_ns  # pushed on once played
        end = self._bot_end_ns
        at_ns = max(0, started_ns) if end is None or started_ns > end + BOT_RESYNC_NS else end
        self.recorder.add_bot(at_ns, pcm.tobytes(), rate)
        self._bot_end_ns = at_ns + duration_ns

    def close(self) -> Path | None:
        """Finish the files; the call recording's path, or None when no audio was seen."""
        if self.closed:
            return self.folder.call_recording if self.recorder is not None else None
        self.closed = True
        if self.recorder is None:
            return None
        self.recorder.close()
        return self.folder.call_recording
