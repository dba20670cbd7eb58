"""The turn state machine: pipecat frames (deduplicated, with their monotonic time) → TurnRecords.

No OpenTelemetry here: the tracker only fills records and calls back when a turn starts and
when it is over. Which turn owns what is decided in one place, ``owner()``:

- **Caller-side frames** (VAD changes, turn-model verdicts, interim transcripts, the commit)
  belong to the *listening* turn: the newest turn, while it is open and not yet committed.
  A final transcript falls back to the newest turn (a segmented ASR can finish after the commit).
- **Bot-side work** (LLM calls, tool runs, LLM text / TTS / bot-speech frames, errors) belongs to
  the *answered* turn: the newest committed turn still open — the turn whose reply it is, even
  when the caller has started speaking again (the new turn is not committed yet).
- **With no answered turn**, a request (LLM call, tool run) or an error goes to the listening
  turn: pipecat 1.14 may start inference before the commit (``on_user_turn_inference_triggered``,
  speculative ``LLMContextFrame(speculation=True)``), and an observer sees frames through its own
  queue, after the processors acted, so a request for the turn being committed can come before
  its ``UserStoppedSpeakingFrame`` is seen. Output frames are not reassigned: output with no
  committed turn (a greeting) or after its turn closed is no turn's reply.
- **With no open turn at all**: a tool run belongs to the call (``call_tools``, a child of the
  conversation), an LLM call is not recorded (``begin_llm_call`` returns None), a frame or an
  error is dropped.

A committed turn stays open until its reply is over, it was interrupted and the bot is silent, the
caller speaks again, the next turn is committed, or the call ends. pipecat's frames only say a reply
*looks* over (LLM done, TTS stopped, bot silent): its TTS gives up on an audio context after 3 s
without audio and the output transport stops the bot after 0.35 s of silence, so on a loaded machine
the rest of a reply (a late LLM sentence, a slow synthesis, a tool's follow-up) comes after
BotStoppedSpeaking. Such a turn is held, still the answered turn, until the line has been quiet
for ``REPLY_HANGOVER_NS`` (timed by the frames that keep flowing: caller audio), as pipecat's own
TurnTrackingObserver waits ``turn_end_timeout_secs`` after the bot stops.
"""

from __future__ import annotations

from enum import Enum
from typing import Callable, Protocol

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    ErrorFrame,
    InterimTranscriptionFrame,
    MetricsFrame,
    TranscriptionFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import TurnMetricsData

from voicetrace.capture.audio_edges import CallerEdges
from voicetrace.capture.bot_onset import BotOnset
from voicetrace.capture.sinks import LLMCall, ToolRun
from voicetrace.capture.turn_record import OUTPUT_FRAMES, TurnRecord

_SECONDS_NS = 1_000_000_000
REPLY_HANGOVER_NS = 2_500_000_000
"""A reply that looks over is held this long after its last output frame before its turn closes
(pipecat's TurnTrackingObserver ends a turn 2.5 s after the bot stops, for the same reason)."""


class Work(Enum):
    """What a frame or a sink call is about, for ``TurnTracker.owner``."""

    CALLER = "caller"
    """Caller-side: VAD, turn-model verdicts, interim transcripts, the commit."""
    TRANSCRIPT = "transcript"
    """A final transcript (may arrive after the commit)."""
    OUTPUT = "output"
    """Bot output frames: LLM text, TTS, bot speech."""
    REQUEST = "request"
    """An LLM call or a tool run the pipeline starts."""
    ERROR = "error"
    """An ErrorFrame from a stage."""


class VADPositions(Protocol):
    def pop_position_s(self, speaking: bool) -> float | None: ...


class TurnTracker:
    def __init__(self, *, on_turn_started: Callable[[TurnRecord, int], None] | None = None,
                 on_turn_closed: Callable[[TurnRecord], None] | None = None,
                 vad_positions: VADPositions | None = None) -> None:
        # on_turn_started(rec, frame_ns): a new turn, its onset in rec, its VAD frame seen at frame_ns.
        # on_turn_closed(rec): the turn is over and its speech ended: its spans can be written.
        self._on_started = on_turn_started
        self._on_closed = on_turn_closed
        # A VAD with voicetrace.pipelines.vad_position.AudioPositionMixin: speech onset and end
        # from the audio position, so a pipeline running behind the audio does not move them.
        self.vad_positions = vad_positions
        self.call_start_ns: int | None = None
        """Call time zero (monotonic ns), for audio positions; set when the conversation starts."""
        self.turns: list[TurnRecord] = []
        self.open: list[TurnRecord] = []
        self.call_tools: list[ToolRun] = []
        """Tool runs with no open turn (e.g. at call start): they belong to the call."""
        self.turns_completed = 0
        self._vad_speaking = False
        self.caller_audio = CallerEdges()
        """Speech edges from the caller audio itself (every input audio frame; see audio_edges)."""
        self.bot_onset = BotOnset()
        """First audible bot frame, from the audio the output transport played (see bot_onset)."""

    # --- ownership: the one rule (module docstring) ----------------------------------------
    def listening(self) -> TurnRecord | None:
        """The turn the caller is in: the newest one, while it is open and not committed."""
        if self.turns and not self.turns[-1].committed and self.turns[-1] in self.open:
            return self.turns[-1]
        return None

    def answered(self) -> TurnRecord | None:
        """The turn the bot is answering: the newest committed turn still open."""
        return next((rec for rec in reversed(self.open) if rec.committed), None)

    def owner(self, work: Work) -> TurnRecord | None:
        if work is Work.CALLER:
            return self.listening()
        if work is Work.TRANSCRIPT:
            return self.listening() or (self.turns[-1] if self.turns else None)
        if work is Work.OUTPUT:
            return self.answered()
        return self.answered() or self.listening()  # REQUEST, ERROR

    # --- sink-side records ------------------------------------------------------------------
    def add_llm_call(self, call: LLMCall) -> TurnRecord | None:
        """Give an instrumented LLM call to its turn; None: no open turn, not recorded."""
        rec = self.owner(Work.REQUEST)
        if rec is not None:
            rec.llm_calls.append(call)
        return rec

    def add_tool(self, run: ToolRun) -> TurnRecord | None:
        """Give a tool run to its turn, else to the call (None)."""
        rec = self.owner(Work.REQUEST)
        (rec.tools if rec is not None else self.call_tools).append(run)
        return rec

    def add_error(self, stage: str, t: int, kind: str, message: str) -> None:
        rec = self.owner(Work.ERROR)
        if rec is not None:
            rec.errors.setdefault(stage, (t, kind, message))

    # --- frames ---------------------------------------------------------------------------
    def on_frame(self, frame, t: int, source=None) -> bool:
        """Take one frame at monotonic time ``t`` (``source``: the processor that pushed it).
        True when the frame is call activity: a frame the turns use, other than an error."""
        if self.open:
            self._close_quiet_replies(t)
        if isinstance(frame, (VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame)):
            self._vad_change(frame, t)
        elif isinstance(frame, MetricsFrame):
            self._metrics(frame, t)
        elif isinstance(frame, UserStoppedSpeakingFrame):
            self._committed(t)
        elif isinstance(frame, TranscriptionFrame):
            self._transcription(frame, t)
        elif isinstance(frame, InterimTranscriptionFrame):
            rec = self.owner(Work.CALLER)
            if rec is not None and frame.text.strip():
                rec.interim_ns.append((t, frame.text.strip()))
        elif isinstance(frame, ErrorFrame):
            self._error(frame, t, source)
            return False
        elif isinstance(frame, OUTPUT_FRAMES):
            if isinstance(frame, BotStartedSpeakingFrame):
                self.bot_onset.started(t)
            rec = self.owner(Work.OUTPUT)
            if rec is not None and rec.record_output(frame, t) and rec.interrupted and not rec.bot_speaking:
                self._close(rec)  # pipecat dropped the rest of an interrupted reply
        else:
            return False
        return True

    def caller_audio_frame(self, frame, t: int) -> None:
        """An input audio frame pushed at ``t``: the audio edge detector hears it, and it times the
        reply hangover (caller audio keeps flowing while the line is quiet)."""
        self.caller_audio.feed(frame.audio, frame.sample_rate, frame.num_channels, t)
        if self.open:
            self._close_quiet_replies(t)

    def bot_audio_played(self, frame) -> None:
        """An audio chunk the output transport played: the bot's onset is the first audible one."""
        onset = self.bot_onset.feed(frame.audio, frame.sample_rate, frame.num_channels)
        rec = self.owner(Work.OUTPUT) if onset is not None else None
        if rec is not None and rec.bot_start_ns is not None and rec.bot_audible_ns is None:
            rec.bot_audible_ns = max(onset, rec.bot_start_ns)

    def close_all(self) -> None:
        for rec in list(self.open):
            self._close(rec)

    def _vad_change(self, frame, t: int) -> None:
        # pipecat's user aggregator announces each VAD change twice (pushed upstream at once,
        # queued downstream for later) and without sibling ids: starts and stops alternate,
        # so a repeat of the last kind is the second copy of the same change.
        speaking = isinstance(frame, VADUserStartedSpeakingFrame)
        if speaking == self._vad_speaking:
            return
        self._vad_speaking = speaking
        if speaking:
            self._speech_started(frame, t)
        else:
            self._speech_stopped(frame, t)

    def _audio_time_ns(self, speaking: bool, fallback_ns: int) -> int:
        """When, on the call's timeline, the VAD's change happened in the audio (else when seen)."""
        if self.vad_positions is None or self.call_start_ns is None:
            return fallback_ns
        position_s = self.vad_positions.pop_position_s(speaking)
        if position_s is None:
            return fallback_ns
        return self.call_start_ns + int(position_s * _SECONDS_NS)

    def _speech_started(self, frame: VADUserStartedSpeakingFrame, t: int) -> None:
        # The VAD declares speech only after start_secs of voiced audio: its onset was earlier.
        declared = self._audio_time_ns(speaking=True, fallback_ns=t)
        vad_onset = declared - int(frame.start_secs * _SECONDS_NS)
        rec = self.owner(Work.CALLER)
        if rec is not None:
            rec.vad_events.append((t, True))
            # The caller resumed before the turn was committed: same turn, earlier
            # end-of-turn conclusions are stale.
            rec.vad_segments += 1
            rec.decided_ns = None
            rec.turn_is_complete = None
            return
        previous = self.turns[-1].speech_end_ns if self.turns else None
        onset, source = self.caller_audio.speech_onset(declared, vad_onset, previous)
        answered = self.answered()
        if answered is not None and answered.reply_finished:
            self._close(answered)  # the caller speaks again after a held reply: it is over
        elif answered is not None:
            answered.interrupted = True
            answered.interrupted_by_onset_ns = onset
        rec = TurnRecord(number=len(self.turns) + 1, speech_start_ns=onset, vad_start_secs=frame.start_secs,
                         vad_onset_ns=vad_onset, start_source=source)
        rec.vad_events.append((t, True))
        if self._on_started is not None:
            self._on_started(rec, t)
        self.turns.append(rec)
        self.open.append(rec)

    def _speech_stopped(self, frame: VADUserStoppedSpeakingFrame, t: int) -> None:
        rec = self.owner(Work.CALLER)
        if rec is None:
            if self.vad_positions is not None:
                self.vad_positions.pop_position_s(speaking=False)  # keep starts and stops paired
            return
        # The VAD declares the stop after stop_secs of silence: its own end of speech was then.
        declared = self._audio_time_ns(speaking=False, fallback_ns=t)
        rec.vad_end_ns = declared - int(frame.stop_secs * _SECONDS_NS)
        rec.vad_events.append((t, False))
        rec.speech_end_ns, rec.end_source = self.caller_audio.speech_end(declared, rec.vad_end_ns, rec.speech_start_ns)
        rec.vad_stop_secs = frame.stop_secs
        rec.vad_stop_ns = t
        # A segmented ASR gets the segment at the VAD stop: its work for the turn starts here.
        rec.asr_start_ns = t

    def _metrics(self, frame: MetricsFrame, t: int) -> None:
        rec = self.owner(Work.CALLER)
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

    def _committed(self, t: int) -> None:
        rec = self.owner(Work.CALLER)
        if rec is None:
            return
        rec.committed_ns = t
        # Without a "complete" verdict (silence fallback, transcript-driven) the commit is the decision.
        if rec.decided_ns is None:
            rec.decided_ns = t
        for older in [r for r in self.open if r is not rec and r.committed]:
            self._close(older)

    def _transcription(self, frame: TranscriptionFrame, t: int) -> None:
        rec = self.owner(Work.TRANSCRIPT)
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

    def _error(self, frame: ErrorFrame, t: int, source) -> None:
        """A stage failed (pipecat pushes an ErrorFrame upstream): its span carries the error.
        The frame may name the failing processor; else the pusher is the failing stage."""
        stage = stage_of(getattr(frame, "processor", None) or source)
        exception = getattr(frame, "exception", None)
        kind = type(exception).__name__ if exception is not None else "ErrorFrame"
        message = str(getattr(frame, "error", "") or "").strip().split("\n")[0][:200]
        self.add_error(stage, t, kind, message)

    def _close_quiet_replies(self, t: int) -> None:
        """Close held turns whose reply still looks over and has been quiet for the hangover."""
        for rec in [r for r in self.open if r.committed and r.reply_finished
                    and t - r.last_output_ns >= REPLY_HANGOVER_NS]:
            self._close(rec)

    def _close(self, rec: TurnRecord) -> None:
        if rec not in self.open:
            return
        self.open.remove(rec)
        if rec.speech_end_ns is None:
            return  # speech that never ended before the call did: nothing to measure
        if self._on_closed is not None:
            self._on_closed(rec)
        self.turns_completed += 1


def stage_of(processor) -> str:
    """Which stage a failing pipecat processor is: asr, llm, tts, or other."""
    from pipecat.services.llm_service import LLMService
    from pipecat.services.stt_service import STTService
    from pipecat.services.tts_service import TTSService

    for kind, stage in ((TTSService, "tts"), (LLMService, "llm"), (STTService, "asr")):
        if isinstance(processor, kind):
            return stage
    return "other"
