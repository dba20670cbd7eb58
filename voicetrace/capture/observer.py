"""VoiceTraceObserver: a pipecat observer that turns a conversation's frames into spans.

Drop it into any pipecat pipeline: ``PipelineWorker(pipeline, observers=[VoiceTraceObserver(
tracer_provider=provider)])``. It only reads frames; it never changes the call it measures.

Each turn's moments are collected in a TurnRecord as the frames pass, on the pipeline's
monotonic clock, and the turn's spans are written when its reply is over (see span_builder).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Any, Callable, Mapping

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    CancelFrame,
    EndFrame,
    ErrorFrame,
    InterimTranscriptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    MetricsFrame,
    StartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import TurnMetricsData
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.transports.base_output import BaseOutputTransport

from voicetrace import __version__
from voicetrace import semconv as sc
from voicetrace.capture.content import ContentPolicy
from voicetrace.capture.llm_stream import LLMCall
from voicetrace.capture.span_builder import SpanBuilder, traceparent_of
from voicetrace.capture.turn_record import ToolRun, TurnRecord
from voicetrace.clock import RunClock

log = logging.getLogger(__name__)

_SECONDS_NS = 1_000_000_000
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
    ) -> None:
        super().__init__(observe_every_push=False)
        self._tracer = tracer_provider.get_tracer("voicetrace", __version__)
        self._clock = clock or RunClock()
        self._frame_time_ns = frame_time_ns
        # A VAD with voicetrace.pipelines.vad_position.AudioPositionMixin: speech onset and end
        # from the audio position, so a pipeline running behind the audio does not move them.
        self._vad_positions = vad_positions
        self._call_start_mono_ns: int | None = None
        self._vad_speaking = False
        self._pipeline_start_ns: int | None = None
        self.content = ContentPolicy.from_flags(capture_content, redact)
        self._builder = SpanBuilder(self._tracer, self._clock.to_wall_ns, self.content, stage_attributes)
        self._conversation_id = conversation_id
        self._conversation_attributes = dict(conversation_attributes or {})
        self._conversation = None
        self._conversation_ctx = None
        self._pipeline_clock_start_ns: int | None = None
        self._turns: list[TurnRecord] = []
        self._open: list[TurnRecord] = []
        self._recent_ids: OrderedDict[int, None] = OrderedDict()
        self._call_tools: list[ToolRun] = []
        self.turns_completed = 0
        self.last_activity_mono_ns = 0

    # --- conversation -----------------------------------------------------------------
    def start_conversation(self, mono_ns: int) -> None:
        """Call time zero: the moment the first frame of the recording is fed."""
        if self._conversation is not None:
            return
        self._call_start_mono_ns = mono_ns
        attrs = {sc.ATTR_CONVERSATION_ID: self._conversation_id, **self._conversation_attributes}
        self._conversation = self._tracer.start_span(
            sc.SPAN_CONVERSATION,
            start_time=self._clock.to_wall_ns(mono_ns),
            attributes={k: v for k, v in attrs.items() if v is not None},
        )
        self._conversation_ctx = trace.set_span_in_context(self._conversation)

    def finish(self, mono_ns: int | None = None) -> None:
        """Close open turns and the conversation (idempotent)."""
        if self._conversation is None and self._pipeline_start_ns is not None:
            self.start_conversation(self._pipeline_start_ns)  # a call without turns still has its span
        for rec in list(self._open):
            self._close_turn(rec)
        if self._conversation_ctx is not None:
            for run in self._call_tools:
                self._builder.emit_tool(run, self._conversation_ctx)
            self._call_tools.clear()
        if self._conversation is not None and self._conversation.is_recording():
            end = mono_ns if mono_ns is not None else self._clock.mono_ns()
            self._conversation.end(end_time=self._clock.to_wall_ns(end))

    @property
    def open_turns(self) -> int:
        return len(self._open)

    @property
    def turns(self) -> list[TurnRecord]:
        return list(self._turns)

    # --- frame intake -----------------------------------------------------------------
    def _mono_ns(self, data: FramePushed) -> int:
        if self._frame_time_ns is not None:
            return self._frame_time_ns(data)
        if self._pipeline_clock_start_ns is None:
            # pipecat stamps pushes with its clock's time since start; SystemClock keeps that
            # start as monotonic_ns, the clock our RunClock reads, so the two line up exactly.
            clock_start = getattr(data.source.get_clock(), "_time", 0)
            if not clock_start:
                return time.monotonic_ns()
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
        if self._seen(frame):
            return
        if isinstance(frame, TTSAudioRawFrame) and isinstance(data.source, BaseOutputTransport):
            return  # the output transport re-chunks TTS audio as it plays: not TTS output
        try:
            if isinstance(frame, ErrorFrame):  # the pusher is the failing stage when the frame doesn't say
                self._handle_error(frame, self._mono_ns(data), data.source)
                return
            self._dispatch(frame, self._mono_ns(data))
        except Exception:  # capture never breaks the call it measures
            log.exception("voicetrace: could not record %s", type(frame).__name__)

    def _dispatch(self, frame, t: int) -> None:
        if isinstance(frame, StartFrame):
            # Not yet call time zero: a replay starts its call when the first frame is fed
            # (after warm-up); a live pipeline's call starts here unless someone says otherwise.
            self._pipeline_start_ns = t
        elif isinstance(frame, (VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame)):
            # pipecat's user aggregator announces each VAD change twice (pushed upstream at once,
            # queued downstream for later) and without sibling ids: starts and stops alternate,
            # so a repeat of the last kind is the second copy of the same change.
            speaking = isinstance(frame, VADUserStartedSpeakingFrame)
            if speaking == self._vad_speaking:
                return
            self._vad_speaking = speaking
            if speaking:
                self._handle_vad_started(frame, t)
            else:
                self._handle_vad_stopped(frame, t)
        elif isinstance(frame, MetricsFrame):
            self._handle_metrics(frame, t)
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._handle_turn_committed(t)
        elif isinstance(frame, TranscriptionFrame):
            self._handle_transcription(frame, t)
        elif isinstance(frame, InterimTranscriptionFrame):
            self._handle_interim(frame, t)
        elif isinstance(frame, LLMFullResponseStartFrame):
            self._handle_llm_start(t)
        elif isinstance(frame, LLMTextFrame):
            self._handle_llm_text(frame, t)
        elif isinstance(frame, LLMFullResponseEndFrame):
            self._handle_llm_end(t)
        elif isinstance(frame, TTSStartedFrame):
            self._handle_tts_started(t)
        elif isinstance(frame, TTSAudioRawFrame):
            self._handle_tts_audio(frame, t)
        elif isinstance(frame, TTSTextFrame):
            self._handle_tts_text(frame)
        elif isinstance(frame, TTSStoppedFrame):
            self._handle_tts_stopped(t)
        elif isinstance(frame, BotStartedSpeakingFrame):
            self._handle_bot_started(t)
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self._handle_bot_stopped(t)
        elif isinstance(frame, ErrorFrame):
            self._handle_error(frame, t)
        elif isinstance(frame, (EndFrame, CancelFrame)):
            self.finish(t)
        else:
            return
        self.last_activity_mono_ns = t

    # --- turns ------------------------------------------------------------------------
    def _listening(self) -> TurnRecord | None:
        """The turn the caller is in: the newest one, while it is not committed."""
        if self._turns and not self._turns[-1].committed and self._turns[-1] in self._open:
            return self._turns[-1]
        return None

    def _responding(self) -> TurnRecord | None:
        """The turn the bot is answering: the newest committed turn still open."""
        for rec in reversed(self._open):
            if rec.committed:
                return rec
        return None

    def _handle_vad_started(self, frame: VADUserStartedSpeakingFrame, t: int) -> None:
        # The VAD declares speech only after start_secs of voiced audio: the onset was earlier.
        onset = self._audio_time_ns(speaking=True, fallback_ns=t) - int(frame.start_secs * _SECONDS_NS)
        rec = self._listening()
        if rec is not None:
            # The caller resumed before the turn was committed: same turn, earlier
            # end-of-turn conclusions are stale.
            rec.vad_segments += 1
            rec.decided_ns = None
            rec.turn_is_complete = None
            return
        responding = self._responding()
        if responding is not None and not responding.reply_finished:
            responding.interrupted = True
            responding.interrupted_by_onset_ns = onset
        if not self.conversation_started:
            self.start_conversation(self._pipeline_start_ns if self._pipeline_start_ns is not None else t)
        rec = TurnRecord(number=len(self._turns) + 1, speech_start_ns=onset, vad_start_secs=frame.start_secs)
        # Started now (with its true start time) so an LLM request can name it as parent.
        rec.span = self._builder.start_turn_span(rec, self._conversation_ctx)
        self._turns.append(rec)
        self._open.append(rec)

    @property
    def conversation_started(self) -> bool:
        return self._conversation is not None

    def use_vad_positions(self, vad) -> None:
        """Take speech onsets and ends from a VAD with AudioPositionMixin (see vad_position.py)."""
        self._vad_positions = vad

    def _audio_time_ns(self, speaking: bool, fallback_ns: int) -> int:
        """When, on the call's timeline, the VAD's change happened in the audio (else when seen)."""
        if self._vad_positions is None or self._call_start_mono_ns is None:
            return fallback_ns
        position_s = self._vad_positions.pop_position_s(speaking)
        if position_s is None:
            return fallback_ns
        return self._call_start_mono_ns + int(position_s * _SECONDS_NS)

    def _handle_vad_stopped(self, frame: VADUserStoppedSpeakingFrame, t: int) -> None:
        rec = self._listening()
        if rec is None:
            if self._vad_positions is not None:
                self._vad_positions.pop_position_s(speaking=False)  # keep starts and stops paired
            return
        # The VAD declares the stop after stop_secs of silence: the last voiced audio ended then.
        rec.speech_end_ns = self._audio_time_ns(speaking=False, fallback_ns=t) - int(frame.stop_secs * _SECONDS_NS)
        rec.vad_stop_secs = frame.stop_secs
        rec.vad_stop_ns = t
        # A segmented ASR gets the segment at the VAD stop: its work for the turn starts here.
        rec.asr_start_ns = t

    def _handle_metrics(self, frame: MetricsFrame, t: int) -> None:
        rec = self._listening()
        if rec is None:
            return
        for data in frame.data:
            if not isinstance(data, TurnMetricsData):
                continue
            rec.turn_probability = data.probability
            rec.turn_is_complete = data.is_complete
            rec.turn_inference_ms = data.e2e_processing_time_ms
            if data.is_complete:
                rec.decided_ns = t
            else:
                rec.incomplete_decisions_ns.append((t, data.probability))

    def _handle_turn_committed(self, t: int) -> None:
        rec = self._listening()
        if rec is None:
            return
        rec.committed_ns = t
        # Without a "complete" verdict (silence fallback, transcript-driven) the commit is the decision.
        if rec.decided_ns is None:
            rec.decided_ns = t
        for older in [r for r in self._open if r is not rec and r.committed]:
            self._close_turn(older)

    def _handle_transcription(self, frame: TranscriptionFrame, t: int) -> None:
        rec = self._listening() or (self._turns[-1] if self._turns else None)
        if rec is None or not frame.text.strip():
            return
        rec.asr_end_ns = t
        rec.transcript = f"{rec.transcript} {frame.text.strip()}".strip()
        if isinstance(frame.result, dict) and frame.result.get("voicetrace"):
            # A streaming ASR has been listening since the onset; its stats ride on the result.
            rec.asr_start_ns = rec.speech_start_ns
            rec.asr_stats = frame.result
        if frame.language is not None:
            rec.language = str(getattr(frame.language, "value", frame.language))
        if rec.asr_start_ns is None:
            rec.asr_start_ns = t

    def _handle_interim(self, frame: InterimTranscriptionFrame, t: int) -> None:
        rec = self._listening()
        if rec is not None and frame.text.strip():
            rec.interim_ns.append((t, frame.text.strip()))

    # Without an instrumented LLM service, the LLM's frames are the best client-side view:
    # LLMFullResponseStart is pushed just before the request, each LLMTextFrame per chunk.
    def _handle_llm_start(self, t: int) -> None:
        rec = self._responding()
        if rec is not None:
            # Each response is its own call (a tool's follow-up, or pipecat running the LLM again).
            rec.frame_llms.append(LLMCall(request_ns=t))

    def _handle_llm_text(self, frame: LLMTextFrame, t: int) -> None:
        rec = self._responding()
        if rec is None or not rec.frame_llms or not frame.text:
            return
        rec.frame_llms[-1].add_content(t, frame.text)

    def _handle_llm_end(self, t: int) -> None:
        rec = self._responding()
        if rec is not None and rec.frame_llms:
            rec.llm_end_ns = rec.frame_llms[-1].end_ns = t
            self._maybe_close(rec)

    # --- hooks for instrumented services (called in the pipeline's own tasks) ------------
    def _current_turn(self) -> TurnRecord | None:
        """The newest open turn: the one an LLM request or a tool run belongs to."""
        return self._turns[-1] if self._turns and self._turns[-1] in self._open else None

    def begin_llm_call(self, prepare_ns: int) -> LLMCall | None:
        rec = self._current_turn()
        if rec is None or rec.span is None:
            return None
        call = LLMCall(request_ns=prepare_ns, prepare_ns=prepare_ns, parent=trace.set_span_in_context(rec.span))
        rec.llm_calls.append(call)
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
        rec = self._current_turn()
        if rec is not None:
            rec.tools.append(run)
        else:
            self._call_tools.append(run)  # before any turn (e.g. at call start): under the conversation
        return run

    def _handle_tts_started(self, t: int) -> None:
        rec = self._responding()
        if rec is None:
            return
        rec.tts_open = True
        if rec.tts_start_ns is None:
            rec.tts_start_ns = t

    def _handle_tts_audio(self, frame: TTSAudioRawFrame, t: int) -> None:
        rec = self._responding()
        if rec is None or rec.tts_start_ns is None:
            return
        if rec.tts_first_audio_ns is None:
            rec.tts_first_audio_ns = t
        rec.tts_last_audio_ns = t
        rec.tts_audio_bytes += len(frame.audio) // max(1, frame.num_channels)
        rec.tts_sample_rate = frame.sample_rate

    def _handle_tts_text(self, frame: TTSTextFrame) -> None:
        rec = self._responding()
        if rec is not None:
            rec.tts_characters += len(frame.text)

    def _handle_tts_stopped(self, t: int) -> None:
        rec = self._responding()
        if rec is None:
            return
        rec.tts_open = False
        rec.tts_stopped_ns = t
        self._maybe_close(rec)

    def _handle_bot_started(self, t: int) -> None:
        rec = self._responding()
        if rec is None:
            return
        rec.bot_speaking = True
        if rec.bot_start_ns is None:
            rec.bot_start_ns = t

    def _handle_bot_stopped(self, t: int) -> None:
        rec = self._responding()
        if rec is None or not rec.bot_speaking:
            return
        rec.bot_speaking = False
        rec.bot_end_ns = t
        self._maybe_close(rec)

    def _handle_error(self, frame: ErrorFrame, t: int, source=None) -> None:
        """A stage failed (pipecat pushes an ErrorFrame upstream): its span carries the error."""
        rec = self._responding() or self._current_turn()
        if rec is None:
            return
        stage = _stage_of(getattr(frame, "processor", None) or source)
        exception = getattr(frame, "exception", None)
        kind = type(exception).__name__ if exception is not None else "ErrorFrame"
        message = str(getattr(frame, "error", "") or "").strip().split("\n")[0][:200]
        rec.errors.setdefault(stage, (t, kind, message))

    def _maybe_close(self, rec: TurnRecord) -> None:
        if rec.reply_finished or (rec.interrupted and not rec.bot_speaking):
            self._close_turn(rec)

    def _close_turn(self, rec: TurnRecord) -> None:
        if rec not in self._open:
            return
        self._open.remove(rec)
        if rec.speech_end_ns is None:
            return  # speech that never ended before the call did: nothing to measure
        self._builder.emit_turn(rec)
        self.turns_completed += 1


def _stage_of(processor) -> str:
    """Which stage a failing pipecat processor is: asr, llm, tts, or other."""
    from pipecat.services.llm_service import LLMService
    from pipecat.services.stt_service import STTService
    from pipecat.services.tts_service import TTSService

    for kind, stage in ((TTSService, "tts"), (LLMService, "llm"), (STTService, "asr")):
        if isinstance(processor, kind):
            return stage
    return "other"
