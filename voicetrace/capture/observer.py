"""VoiceTraceObserver: a pipecat observer that turns a conversation's frames into spans.

Drop it into any pipecat pipeline: ``PipelineWorker(pipeline, observers=[VoiceTraceObserver(
tracer_provider=provider)])``. It only reads frames; it never changes the call it measures.

Three layers: this observer takes frames in (dedup of broadcast pairs, the pipeline's clock
mapped onto the run's one ``RunClock``) and owns the conversation span; the ``TurnTracker``
turns frames into TurnRecords and decides which turn owns what; the ``SpanBuilder`` writes a
turn's spans when its reply is over. It is also the LLM and tool sink (``capture.sinks``) for
instrumented services, so their calls land in the turn the tracker says.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Callable, Mapping

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pipecat.frames.frames import CancelFrame, EndFrame, InputAudioRawFrame, OutputAudioRawFrame, StartFrame, TTSAudioRawFrame
from pipecat.observers.base_observer import BaseObserver, FrameProcessed, FramePushed
from pipecat.transports.base_output import BaseOutputTransport

from voicetrace import __version__
from voicetrace import semconv as sc
from voicetrace.capture.content import ContentPolicy
from voicetrace.capture.integration import BlockedLoop, IntegrationTracker, QueueWait
from voicetrace.capture.loop_lag import LoopLagMonitor
from voicetrace.capture.realtime import RealTimeCheck
from voicetrace.capture.sinks import LLMCall, ToolRun
from voicetrace.capture.span_builder import SpanBuilder, traceparent_of
from voicetrace.capture.turn_record import TurnRecord
from voicetrace.capture.turn_tracker import TurnTracker
from voicetrace.clock import RunClock

log = logging.getLogger(__name__)

_RECENT_FRAMES = 4096


class VoiceTraceObserver(BaseObserver):
    def __init__(
        self,
        *,
        tracer_provider: TracerProvider,
        clock: RunClock | None = None,
        capture_content: bool | None = None,
        redact: bool = False,
        conversation_id: str | None = None,
        conversation_attributes: Mapping[str, Any] | None = None,
        stage_attributes: Mapping[str, Mapping[str, Any]] | None = None,
        frame_time_ns: Callable[[FramePushed], int] | None = None,
        vad_positions=None,
        audio_tap=None,
        meter_provider=None,
        metric_attributes: Mapping[str, Any] | None = None,
        v2v_budget_ms: float | None = None,
        measure_integration: bool = True,
    ) -> None:
        # Queue waits need every hop of a frame; the turn tracker still takes each frame once.
        super().__init__(observe_every_push=measure_integration)
        self._tracer = tracer_provider.get_tracer("voicetrace", __version__)
        self.clock = clock or RunClock()
        """Every stamp's clock: frame times, and (through the LLMInstrumentor) the LLM's."""
        self._frame_time_ns = frame_time_ns
        self.content = ContentPolicy.from_flags(capture_content, redact)
        self._builder = SpanBuilder(self._tracer, self.clock.to_wall_ns, self.content, stage_attributes)
        self.metrics = None
        """The MetricsRecorder when a ``meter_provider`` was given (never the global one)."""
        if meter_provider is not None:
            from voicetrace.capture.metrics_recorder import MetricsRecorder, default_metric_attributes

            self.metrics = MetricsRecorder(
                meter_provider, default_metric_attributes(tracer_provider, stage_attributes, metric_attributes),
                **({"v2v_budget_ms": v2v_budget_ms} if v2v_budget_ms is not None else {}))
        self._tracker = TurnTracker(on_turn_started=self._turn_started, on_turn_closed=self._turn_closed,
                                    vad_positions=vad_positions)
        self._conversation_id = conversation_id
        self._conversation_attributes = dict(conversation_attributes or {})
        self._conversation = None
        self._conversation_ctx = None
        self._pipeline_start_ns: int | None = None
        self._pipeline_clock_start_ns: int | None = None
        self._recent_ids: OrderedDict[int, None] = OrderedDict()
        self.last_activity_mono_ns = 0
        self.audio_tap = audio_tap
        """Opt-in: a capture.audio_tap.CallAudioTap that records caller and bot audio on the call's timeline."""
        # Integration time (capture.integration): loop stalls and queue waits, spans under the conversation.
        self._integration = IntegrationTracker(self._loop_blocked, self._queue_waited) if measure_integration else None
        self.loop_lag = LoopLagMonitor(self.clock, self._integration.add_stall) if measure_integration else None
        """The event-loop lag monitor; runs from the pipeline's setup to its cleanup (None: not measured)."""
        self.blocked: list[BlockedLoop] = []
        self.realtime = RealTimeCheck()
        """Did the call keep up with real time (capture.realtime)? Transports that know deadlines report to it."""

    # --- conversation -----------------------------------------------------------------
    def start_conversation(self, mono_ns: int) -> None:
        """Call time zero: the moment the first frame of the recording is fed."""
        if self._conversation is not None:
            return
        self._tracker.call_start_ns = mono_ns
        attrs = {sc.ATTR_CONVERSATION_ID: self._conversation_id, **self._conversation_attributes}
        if self.loop_lag is not None:
            attrs[sc.ATTR_LOOP_INTERVAL_MS] = self.loop_lag.interval_ns / 1e6
            attrs[sc.ATTR_LOOP_STALL_MS] = self.loop_lag.stall_ns / 1e6
        self._conversation = self._tracer.start_span(
            sc.SPAN_CONVERSATION,
            start_time=self.clock.to_wall_ns(mono_ns),
            attributes={k: v for k, v in attrs.items() if v is not None},
        )
        self._conversation_ctx = trace.set_span_in_context(self._conversation)

    def finish(self, mono_ns: int | None = None) -> None:
        """Close open turns and the conversation (idempotent)."""
        if self._conversation is None and self._pipeline_start_ns is not None:
            self.start_conversation(self._pipeline_start_ns)  # a call without turns still has its span
        self._tracker.close_all()
        if self._integration is not None:
            self._integration.flush()
        if self._conversation_ctx is not None:
            for run in self._tracker.call_tools:
                self._builder.emit_tool(run, self._conversation_ctx)
                if self.metrics is not None:
                    self.metrics.record_tool(run, self._conversation)
            self._tracker.call_tools.clear()
        if self._conversation is not None and self._conversation.is_recording():
            self._conversation.set_attributes(self._realtime_attributes())
            end = mono_ns if mono_ns is not None else self.clock.mono_ns()
            self._conversation.end(end_time=self.clock.to_wall_ns(end))

    @property
    def conversation_started(self) -> bool:
        return self._conversation is not None

    @property
    def turns_completed(self) -> int:
        return self._tracker.turns_completed

    @property
    def open_turns(self) -> int:
        return len(self._tracker.open)

    @property
    def turns(self) -> list[TurnRecord]:
        return list(self._tracker.turns)

    def use_vad_positions(self, vad) -> None:
        """Take speech onsets and ends from a VAD with AudioPositionMixin (see vad_position.py)."""
        self._tracker.vad_positions = vad

    def _turn_started(self, rec: TurnRecord, frame_ns: int) -> None:
        if self._conversation is None:
            self.start_conversation(self._pipeline_start_ns if self._pipeline_start_ns is not None else frame_ns)
        # Started now (with its true start time) so an LLM request can name it as parent.
        rec.span = self._builder.start_turn_span(rec, self._conversation_ctx)

    # --- integration time ---------------------------------------------------------------
    async def setup(self, task_manager) -> None:
        await super().setup(task_manager)
        if self.loop_lag is not None:
            self.loop_lag.start()

    async def cleanup(self) -> None:
        if self.loop_lag is not None:
            await self.loop_lag.stop()
        await super().cleanup()

    def _loop_blocked(self, block: BlockedLoop) -> None:
        self.blocked.append(block)
        self.realtime.loop_blocked(block.start_ns, block.end_ns)
        if self._conversation is not None and self._conversation.is_recording():
            self._builder.emit_span(sc.SPAN_LOOP_BLOCKED, self._conversation_ctx, block.start_ns, block.end_ns,
                                    {sc.ATTR_LOOP_PROCESSOR: block.processor, sc.ATTR_LOOP_LATE_MS: block.late_ns / 1e6})

    def _queue_waited(self, wait: QueueWait) -> None:
        if self._conversation is not None and self._conversation.is_recording():
            self._builder.emit_span(sc.SPAN_QUEUE_WAIT, self._conversation_ctx, wait.start_ns, wait.end_ns,
                                    {sc.ATTR_QUEUE_PROCESSOR: wait.processor, sc.ATTR_QUEUE_FRAMES: wait.frames,
                                     sc.ATTR_QUEUE_MAX_WAIT_MS: wait.max_wait_ns / 1e6})

    async def on_process_frame(self, data: FrameProcessed) -> None:
        if self._integration is not None:
            try:
                self._integration.on_process(data.frame, self._mono_ns(data), data.processor)
            except Exception:  # capture never breaks the call it measures
                log.exception("voicetrace: could not time %s", type(data.frame).__name__)

    # --- behind real time ----------------------------------------------------------------
    def _turn_closed(self, rec: TurnRecord) -> None:
        ends = (rec.bot_end_ns, rec.tts_last_audio_ns, rec.llm_end_ns, rec.committed_ns, rec.speech_end_ns)
        reasons = self.realtime.reasons_between(rec.speech_start_ns, max(t for t in ends if t is not None))
        if reasons and rec.span is not None:
            rec.span.set_attributes({sc.ATTR_BEHIND_REAL_TIME: True, sc.ATTR_BEHIND_REASONS: reasons})
        self._builder.emit_turn(rec)
        if self.metrics is not None:
            self.metrics.record_turn(rec)

    def _realtime_attributes(self) -> dict:
        if not self.realtime.behind:
            return {}
        s = self.realtime.summary()
        return {sc.ATTR_BEHIND_REAL_TIME: True,
                sc.ATTR_BEHIND_REASONS: [r for r in ("input_late", "loop_lag", "playback_late") if s[r]["count"]],
                sc.ATTR_INPUT_LATE_MAX_MS: s["input_late"]["worst_ms"],
                sc.ATTR_LOOP_BLOCKED_MAX_MS: s["loop_lag"]["worst_ms"],
                sc.ATTR_PLAYBACK_LATE_MAX_MS: s["playback_late"]["worst_ms"]}

    # --- frame intake -----------------------------------------------------------------
    def _mono_ns(self, data: FramePushed | FrameProcessed) -> int:
        if self._frame_time_ns is not None:
            return self._frame_time_ns(data)
        if self._pipeline_clock_start_ns is None:
            # pipecat stamps pushes with its clock's time since start; SystemClock keeps that
            # start as monotonic_ns, the clock our RunClock reads, so the two line up exactly.
            processor = data.source if isinstance(data, FramePushed) else data.processor
            clock_start = getattr(processor.get_clock(), "_time", 0)
            if not clock_start:
                return self.clock.mono_ns()
            self._pipeline_clock_start_ns = clock_start
        return self._pipeline_clock_start_ns + data.timestamp

    def _seen(self, frame) -> bool:
        """Broadcast frames come as an upstream/downstream pair: count each pair once."""
        sibling = getattr(frame, "broadcast_sibling_id", None)
        if sibling is not None and sibling in self._recent_ids:
            return True
        self._recent_ids[frame.id] = None
        if len(self._recent_ids) > _RECENT_FRAMES:
            self._recent_ids.popitem(last=False)
        return False

    async def on_push_frame(self, data: FramePushed) -> None:
        frame = data.frame
        if self._integration is not None:
            try:
                self._integration.on_push(frame, self._mono_ns(data), data.source, data.destination)
            except Exception:  # capture never breaks the call it measures
                log.exception("voicetrace: could not time %s", type(frame).__name__)
            if not data.first_push:
                return  # a later hop of a frame already taken
        if self._seen(frame):
            return
        if self.audio_tap is not None:
            self._record_audio(data)
        try:
            if isinstance(frame, OutputAudioRawFrame) and isinstance(data.source, BaseOutputTransport):
                # Audio the transport has played (re-chunked TTS audio): not TTS output, but where
                # the bot became audible.
                self._tracker.bot_audio_played(frame)
                return
            self._dispatch(frame, self._mono_ns(data), data.source)
        except Exception:  # capture never breaks the call it measures
            log.exception("voicetrace: could not record %s", type(frame).__name__)

    def _record_audio(self, data: FramePushed) -> None:
        side = self.audio_tap.side_of(data.frame, data.source)
        if side is None:
            return
        try:
            t = self._mono_ns(data)
            if self._conversation is None:  # the recording's sample 0 is call time zero
                self.start_conversation(self._pipeline_start_ns if self._pipeline_start_ns is not None else t)
            self.audio_tap.add(side, data.frame, t - self._tracker.call_start_ns)
        except Exception:  # capture never breaks the call it measures: stop recording, keep tracing
            log.exception("voicetrace: call audio recording stopped")
            self.audio_tap = None

    def _dispatch(self, frame, t: int, source=None) -> None:
        if isinstance(frame, StartFrame):
            # Not yet call time zero: a replay starts its call when the first frame is fed
            # (after warm-up); a live pipeline's call starts here unless someone says otherwise.
            self._pipeline_start_ns = t
        elif isinstance(frame, (EndFrame, CancelFrame)):
            self.finish(t)
        elif isinstance(frame, InputAudioRawFrame):
            self._tracker.caller_audio_frame(frame, t)  # speech edges from the audio
            return  # not call activity: a replay feeds silence until the call is idle
        elif not self._tracker.on_frame(frame, t, source):
            return
        self.last_activity_mono_ns = t

    # --- sinks for instrumented services (called in the pipeline's own tasks) -----------
    def begin_llm_call(self, prepare_ns: int) -> LLMCall | None:
        call = LLMCall(request_ns=prepare_ns, prepare_ns=prepare_ns)
        rec = self._tracker.add_llm_call(call)
        if rec is None:
            return None
        call.parent = trace.set_span_in_context(rec.span)
        return call

    def llm_request_sent(self, call: LLMCall, request_ns: int) -> str | None:
        call.request_ns = request_ns
        call.span = self._builder.start_llm_span(request_ns, call.parent)
        call.traceparent = traceparent_of(call.span)
        return call.traceparent

    def end_llm_call(self, call: LLMCall) -> None:
        """Nothing to do until the turn closes: the call object already holds its timing."""

    def begin_tool(self, name: str, arguments: str | None, trigger: str, start_ns: int) -> ToolRun:
        run = ToolRun(name=name, start_ns=start_ns, arguments=arguments, trigger=trigger)
        self._tracker.add_tool(run)  # no open turn (e.g. at call start): under the conversation
        return run
