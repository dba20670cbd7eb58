"""Integration time in capture: loop stalls attributed from the frame events around them, queue waits
from push → process, spans under the conversation. Frame times are placed by hand (fake clock)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pipecat.frames.frames import InputAudioRawFrame, TextFrame, VADUserStartedSpeakingFrame
from pipecat.observers.base_observer import FrameProcessed, FramePushed
from pipecat.processors.frame_processor import FrameDirection

from voicetrace import semconv as sc
from voicetrace.capture.integration import IntegrationTracker
from voicetrace.capture.loop_lag import LoopLagMonitor, Stall
from voicetrace.capture.observer import VoiceTraceObserver
from voicetrace.clock import FakeClock, RunClock

MS = 1_000_000
A, B, C = (SimpleNamespace(name=n) for n in ("Source#0", "Blocker#0", "LLM#0"))


def tracker():
    blocked, waits = [], []
    return IntegrationTracker(blocked.append, waits.append), blocked, waits


def test_a_block_inside_process_frame_is_named_and_timed_by_the_events_around_it():
    it, blocked, _ = tracker()
    frame = TextFrame(text="x")
    it.on_push(frame, 100 * MS, A, B)
    it.on_process(frame, 101 * MS, B)  # B starts on the frame, then holds the loop
    it.add_stall(Stall(since_ns=95 * MS, due_ns=100 * MS + MS // 2, end_ns=302 * MS))  # the monitor woke late
    assert not blocked  # events up to the stall's end are not in yet
    it.on_push(frame, 301 * MS, B, C)  # B pushes when its synchronous call returns
    it.on_push(TextFrame(text="y"), 303 * MS, A, B)
    (block,) = blocked
    assert (block.processor, block.start_ns, block.end_ns) == ("Blocker#0", 101 * MS, 301 * MS)
    assert block.late_ns == 201 * MS + MS // 2


def test_blocks_back_to_back_in_one_stall_are_each_their_own():
    it, blocked, _ = tracker()
    frames = [TextFrame(text=str(k)) for k in range(3)]
    t = 10 * MS
    for f in frames:  # B works through three queued frames, 60 ms of sleep each, without yielding
        it.on_process(f, t, B)
        it.on_push(f, t + 60 * MS, B, C)
        t += 60 * MS + 100_000
    it.add_stall(Stall(since_ns=5 * MS, due_ns=15 * MS, end_ns=t))
    it.flush()
    assert [(b.processor, (b.end_ns - b.start_ns) / MS) for b in blocked] == [("Blocker#0", 60.0)] * 3


def test_a_stall_with_no_frame_event_names_no_processor_and_starts_when_the_monitor_was_due():
    it, blocked, _ = tracker()
    it.add_stall(Stall(since_ns=0, due_ns=10 * MS, end_ns=90 * MS))
    it.flush()
    (block,) = blocked
    assert (block.processor, block.start_ns, block.end_ns) == (None, 10 * MS, 90 * MS)


def test_queue_waits_merge_per_processor_and_leave_out_audio_and_tiny_waits():
    it, _, waits = tracker()
    f1, f2, f3 = TextFrame(text="1"), TextFrame(text="2"), TextFrame(text="3")
    it.on_push(f1, 0, A, C)
    it.on_push(f2, 5 * MS, A, C)
    it.on_process(f1, 30 * MS, C)
    it.on_process(f2, 40 * MS, C)  # waited while f1 did: one interval 0 → 40 ms
    it.on_push(f3, 100 * MS, A, C)
    it.on_process(f3, 101 * MS, C)  # 1 ms: below the 2 ms floor
    audio = InputAudioRawFrame(audio=b"\0\0" * 320, sample_rate=16000, num_channels=1)
    it.on_push(audio, 200 * MS, A, B)
    it.on_process(audio, 260 * MS, B)
    it.flush()
    assert [(w.processor, w.start_ns, w.end_ns, w.frames, w.max_wait_ns) for w in waits] == [
        ("LLM#0", 0, 40 * MS, 2, 35 * MS)]


def _observer():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    obs = VoiceTraceObserver(tracer_provider=provider, clock=FakeClock(), frame_time_ns=lambda d: d.timestamp)
    return obs, exporter


async def _feed(obs):
    frame = TextFrame(text="x")
    down = FrameDirection.DOWNSTREAM
    await obs.on_push_frame(FramePushed(source=A, destination=B, frame=frame, direction=down, timestamp=100 * MS))
    await obs.on_process_frame(FrameProcessed(processor=B, frame=frame, direction=down, timestamp=160 * MS))
    obs.loop_lag._on_stall(Stall(since_ns=150 * MS, due_ns=160 * MS, end_ns=392 * MS))
    later = FramePushed(source=B, destination=C, frame=frame, direction=down, timestamp=390 * MS, first_push=False)
    await obs.on_push_frame(later)


def test_the_observer_writes_loop_blocked_and_queue_wait_spans_under_the_conversation():
    obs, exporter = _observer()
    obs.start_conversation(0)
    asyncio.run(_feed(obs))
    obs.finish(1000 * MS)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    conv, block, wait = spans[sc.SPAN_CONVERSATION], spans[sc.SPAN_LOOP_BLOCKED], spans[sc.SPAN_QUEUE_WAIT]
    assert conv.attributes[sc.ATTR_LOOP_INTERVAL_MS] == 10.0
    assert block.parent.span_id == conv.context.span_id == wait.parent.span_id
    assert block.attributes[sc.ATTR_LOOP_PROCESSOR] == "Blocker#0"
    assert (block.end_time - block.start_time) == 230 * MS  # 160 → 390 ms: the event gap, not the monitor's tick
    assert wait.attributes[sc.ATTR_QUEUE_PROCESSOR] == "Blocker#0" and (wait.end_time - wait.start_time) == 60 * MS


def test_later_hops_reach_the_integration_tracker_but_not_the_turns():
    obs, _ = _observer()
    assert obs.observe_every_push
    frame = VADUserStartedSpeakingFrame(start_secs=0.2)
    down = FrameDirection.DOWNSTREAM
    for t, first in ((100 * MS, True), (500 * MS, False)):
        asyncio.run(obs.on_push_frame(FramePushed(source=A, destination=B, frame=frame, direction=down, timestamp=t,
                                                  first_push=first)))
    assert obs.last_activity_mono_ns == 100 * MS and obs.open_turns == 1
    off = VoiceTraceObserver(tracer_provider=TracerProvider(), measure_integration=False)
    assert not off.observe_every_push and off.loop_lag is None


def test_the_monitor_reports_a_blocked_loop_at_least_as_long_as_the_block():
    stalls = []

    async def main():
        monitor = LoopLagMonitor(RunClock(), stalls.append)
        monitor.start()
        await asyncio.sleep(0.03)  # let it tick a few times
        time.sleep(0.08)  # the injected block
        while not stalls:
            await asyncio.sleep(0.005)
        await monitor.stop()
        return monitor

    monitor = asyncio.run(main())
    # The block began after the monitor's last wake and ended before its late one: whatever else the
    # machine does, the measured window covers it (upper bounds would depend on the load).
    assert max(s.end_ns - s.since_ns for s in stalls) >= 80 * MS
    assert max(s.late_ns for s in stalls) >= 80 * MS - monitor.interval_ns
    assert not monitor.running


def test_a_block_after_a_pipeline_sink_s_frame_names_no_processor():
    it, blocked, _ = tracker()
    sink = SimpleNamespace(name="PipelineWorker#0::Sink")  # hands frames on; it does not block
    it.on_process(TextFrame(text="x"), 100 * MS, sink)
    it.add_stall(Stall(since_ns=95 * MS, due_ns=105 * MS, end_ns=140 * MS))
    it.flush()
    (block,) = blocked
    assert (block.processor, block.start_ns, block.end_ns) == (None, 100 * MS, 140 * MS)
