"""A real pipecat pipeline in which one processor blocks the event loop (``time.sleep`` in its
``process_frame``, the classic synchronous model call in a handler): the trace must name that
processor and hold the blocked time to within 5 ms, and the turn's V2V breakdown must show it as
loop lag. Truth is what the blocking processor measured around its own sleep, not voicetrace's numbers."""

from __future__ import annotations

import asyncio
import time

import pytest
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    StartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicetrace import CallTrace
from voicetrace import semconv as sc
from voicetrace.report import build_report
from voicetrace.traces.files import read_trace_files

pytestmark = pytest.mark.integration
TOLERANCE_MS = 5.0


class Blocker(FrameProcessor):
    """Sleeps synchronously on the frame types it is given, recording the block it really made."""

    def __init__(self, blocks: dict[type, float]) -> None:
        super().__init__()
        self._blocks = blocks
        self.made: list[tuple[type, int, int]] = []

    async def process_frame(self, frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        seconds = self._blocks.get(type(frame))
        if seconds:
            start = time.monotonic_ns()
            time.sleep(seconds)  # holds the event loop
            self.made.append((type(frame), start, time.monotonic_ns()))
        await self.push_frame(frame, direction)


class Caller(FrameProcessor):
    """Pushes two turns' caller frames on its own timetable, then ends the pipeline when the bot is done."""

    def __init__(self, bot_done: list[asyncio.Event], on_done) -> None:
        super().__init__()
        self._bot_done = bot_done
        self._on_done = on_done

    async def process_frame(self, frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, StartFrame):
            self.create_task(self._speak(), "caller")

    async def _speak(self) -> None:
        down = FrameDirection.DOWNSTREAM
        for done in self._bot_done:
            await asyncio.sleep(0.2)
            await self.push_frame(VADUserStartedSpeakingFrame(start_secs=0.2), down)
            await asyncio.sleep(0.6)
            await self.push_frame(VADUserStoppedSpeakingFrame(stop_secs=0.2), down)
            await self.push_frame(TranscriptionFrame(text="my claim", user_id="u", timestamp="", finalized=True), down)
            await self.push_frame(UserStoppedSpeakingFrame(), down)
            await done.wait()
        await self._on_done()


class Bot(FrameProcessor):
    """Answers each committed turn with the frames an LLM, a TTS and a transport would push."""

    def __init__(self, bot_done: list[asyncio.Event]) -> None:
        super().__init__()
        self._bot_done = list(bot_done)

    async def process_frame(self, frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, UserStoppedSpeakingFrame):
            self.create_task(self._reply(self._bot_done.pop(0)), "bot")

    async def _reply(self, done: asyncio.Event) -> None:
        down = FrameDirection.DOWNSTREAM
        await self.push_frame(LLMFullResponseStartFrame(), down)
        await asyncio.sleep(0.03)
        for word in ("Sure.", " One", " moment."):
            await self.push_frame(LLMTextFrame(text=word), down)
        await self.push_frame(LLMFullResponseEndFrame(), down)
        await self.push_frame(TTSStartedFrame(), down)
        await self.push_frame(TTSAudioRawFrame(audio=b"\x01\x00" * 1600, sample_rate=16000, num_channels=1), down)
        await self.push_frame(BotStartedSpeakingFrame(), down)
        await self.push_frame(TTSStoppedFrame(), down)
        await asyncio.sleep(0.1)
        await self.push_frame(BotStoppedSpeakingFrame(), down)
        done.set()


async def _run(trace_path, before_bot: Blocker, after_bot: Blocker) -> None:
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    bot_done = [asyncio.Event(), asyncio.Event()]
    with CallTrace(trace_path, service_name="blocking-test", otlp=False) as vt:
        async def on_done() -> None:
            await worker.stop_when_done()

        pipeline = Pipeline([Caller(bot_done, on_done), before_bot, Bot(bot_done), after_bot])
        worker = PipelineWorker(pipeline, params=PipelineParams(), observers=[vt.observer], enable_rtvi=False,
                                idle_timeout_secs=None)
        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(worker)
        await runner.run()


def _blocks_in_trace(spans, processor) -> list[float]:
    blocked = spans[spans["name"] == sc.SPAN_LOOP_BLOCKED]
    named = blocked[[a.get(sc.ATTR_LOOP_PROCESSOR) == processor.name for a in blocked["attributes"]]]
    return sorted(((named["end_ns"] - named["start_ns"]) / 1e6).tolist())


def test_a_processor_that_blocks_the_loop_is_named_with_the_time_it_blocked(tmp_path):
    # On the transcript (between "ready" and the LLM request: what the breakdown called unattributed),
    # and on each streamed token (three 60 ms blocks back to back, inside the first-sentence wait).
    on_transcript, on_tokens = Blocker({TranscriptionFrame: 0.15}), Blocker({LLMTextFrame: 0.06})
    asyncio.run(_run(tmp_path / "trace.jsonl", on_transcript, on_tokens))
    assert len(on_transcript.made) == 2 and len(on_tokens.made) == 2 * 3
    tables = read_trace_files([tmp_path / "trace.jsonl"])
    for blocker in (on_transcript, on_tokens):
        got_ms = _blocks_in_trace(tables.spans, blocker)
        truth_ms = sorted((end - start) / 1e6 for _, start, end in blocker.made)
        # Every block is one span naming the processor that made it, within 5 ms of what it really slept.
        assert len(got_ms) == len(truth_ms), (blocker.name, got_ms, truth_ms)
        assert all(abs(g - t) <= TOLERANCE_MS for g, t in zip(got_ms, truth_ms)), (blocker.name, got_ms, truth_ms)

    turns = build_report(tables).turns.sort_values("turn")
    assert len(turns) == 2
    for row, (_, start, end) in zip(turns.itertuples(), on_transcript.made):
        truth = (end - start) / 1e6
        assert row.loop_blocker == on_transcript.name
        assert abs(row.loop_blocked_ms - truth) <= TOLERANCE_MS
        # The block sat between the transcript and the LLM request: loop lag in the breakdown.
        assert abs(row.bd_loop_lag_ms - truth) <= TOLERANCE_MS, (row.bd_loop_lag_ms, truth)
