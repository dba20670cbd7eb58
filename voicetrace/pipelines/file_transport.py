"""A file transport for replaying a recorded call through a pipecat pipeline in real time.

Input: feeds the caller's audio as 16 kHz mono 20 ms frames, paced against the monotonic
clock (frame n is fed at call time n × 20 ms), then silence until the bot has finished.
Output: plays each bot audio chunk in real time and records it at the moment it plays.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, Iterable

from pipecat.frames.frames import CancelFrame, InputAudioRawFrame, OutputAudioRawFrame, StartFrame
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from voicetrace.audio.recorder import CallRecorder
from voicetrace.audio.source import FRAME_BYTES, FRAME_MS, PIPELINE_SAMPLE_RATE

_FRAME_NS = FRAME_MS * 1_000_000
_SILENCE = b"\x00" * FRAME_BYTES


def transport_params() -> TransportParams:
    return TransportParams(
        audio_in_enabled=True,
        audio_in_sample_rate=PIPELINE_SAMPLE_RATE,
        audio_out_enabled=True,
        audio_out_sample_rate=PIPELINE_SAMPLE_RATE,
        audio_out_end_silence_secs=0,  # else 2 s of silence are written at the end
        audio_out_auto_silence=False,
    )


class CallTimeline:
    """Call time zero (monotonic ns), set when the first frame is fed."""

    def __init__(self) -> None:
        self.start_mono_ns: int | None = None

    def offset_ns(self, mono_ns: int) -> int:
        return mono_ns - (self.start_mono_ns or mono_ns)


class FileInputTransport(BaseInputTransport):
    def __init__(
        self,
        frames: Iterable[bytes],
        timeline: CallTimeline,
        recorder: CallRecorder,
        *,
        on_call_start: Callable[[int], None],
        on_progress: Callable[[float], None],
        call_finished: Callable[[int], bool],
        on_done: Callable[[], "asyncio.Future | None"],
        max_tail_s: float = 30.0,
        before_feed: Callable[[], Awaitable[None]] | None = None,
        on_frame_fed: Callable[[int, int], None] | None = None,
    ) -> None:
        super().__init__(transport_params())
        self._on_frame_fed = on_frame_fed  # (deadline_ns, fed_ns) per frame: e.g. RealTimeCheck.input_late
        self._frames = frames
        self._timeline = timeline
        self._recorder = recorder
        self._on_call_start = on_call_start
        self._on_progress = on_progress
        self._call_finished = call_finished
        self._on_done = on_done
        self._max_tail_frames = int(max_tail_s * 1000 / FRAME_MS)
        self._before_feed = before_feed
        self._feeder: asyncio.Task | None = None
        self.frames_fed = 0
        self.error: BaseException | None = None

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)
        if self._feeder is None:
            self._feeder = self.create_task(self._feed(), "voicetrace::feed")

    async def cancel(self, frame: CancelFrame) -> None:
        await super().cancel(frame)
        if self._feeder is not None and not self._feeder.done():
            await self.cancel_task(self._feeder)

    async def _push(self, pcm: bytes, index: int, start_ns: int) -> None:
        # Pace against absolute deadlines so scheduling jitter never accumulates into drift.
        deadline = start_ns + index * _FRAME_NS
        delay_ns = deadline - time.monotonic_ns()
        if delay_ns > 0:
            await asyncio.sleep(delay_ns / 1e9)
        if self._on_frame_fed is not None:
            self._on_frame_fed(deadline, time.monotonic_ns())
        self._recorder.add_caller(index * _FRAME_NS, pcm)
        await self.push_audio_frame(InputAudioRawFrame(audio=pcm, sample_rate=PIPELINE_SAMPLE_RATE, num_channels=1))
        self.frames_fed = index + 1

    async def _feed(self) -> None:
        if self._before_feed is not None:
            try:
                await self._before_feed()  # e.g. warm-up: before call time zero, not inside the call
            except Exception as exc:
                self.error = exc
                await self._on_done()
                return
        start_ns = time.monotonic_ns()
        self._timeline.start_mono_ns = start_ns
        self._on_call_start(start_ns)
        index = 0
        try:
            for pcm in self._frames:
                await self._push(pcm, index, start_ns)
                index += 1
                if index % 25 == 0:
                    self._on_progress(index * FRAME_MS / 1000)
            # Keep feeding silence until the last reply has played: the VAD controller
            # forces a speech stop if input stops, and the call continues while the bot talks.
            for _ in range(self._max_tail_frames):
                if self._call_finished(time.monotonic_ns()):
                    break
                await self._push(_SILENCE, index, start_ns)
                index += 1
        except Exception as exc:  # surfaced by the runner as one line
            self.error = exc
        self._on_progress(index * FRAME_MS / 1000)
        await self._on_done()


class PacedOutputTransport(BaseOutputTransport):
    def __init__(self, timeline: CallTimeline, recorder: CallRecorder,
                 on_late: Callable[[int, int], None] | None = None) -> None:
        super().__init__(transport_params())
        self._on_late = on_late  # (due_ns, woke_ns) after each chunk: e.g. RealTimeCheck.playback_late
        self._timeline = timeline
        self._recorder = recorder
        self._play_until_ns = 0

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        now = time.monotonic_ns()
        samples = len(frame.audio) // 2 // max(1, frame.num_channels)
        duration_ns = samples * 1_000_000_000 // frame.sample_rate
        # A chunk written while the previous one still plays follows it seamlessly.
        late_ns = now - self._play_until_ns
        play_at = self._play_until_ns if 0 <= late_ns < 5_000_000 else max(now, self._play_until_ns)
        self._play_until_ns = play_at + duration_ns
        self._recorder.add_bot(self._timeline.offset_ns(play_at), frame.audio, frame.sample_rate)
        # Play in real time: return when the chunk has finished playing.
        await asyncio.sleep(max(0, self._play_until_ns - time.monotonic_ns()) / 1e9)
        if self._on_late is not None:  # woke after this chunk ended: the next one goes on late
            self._on_late(self._play_until_ns, time.monotonic_ns())
        return True
