"""The moments of one turn, as monotonic nanoseconds, collected while it happens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)

from voicetrace.capture.sinks import LLMCall, ToolRun

OUTPUT_FRAMES = (LLMFullResponseStartFrame, LLMTextFrame, LLMFullResponseEndFrame, TTSStartedFrame, TTSAudioRawFrame,
                 TTSTextFrame, TTSStoppedFrame, BotStartedSpeakingFrame, BotStoppedSpeakingFrame)
"""The bot-output frames a turn records (``TurnRecord.record_output``)."""


@dataclass
class TurnRecord:
    number: int
    speech_start_ns: int
    span: Any = None
    """The live ``turn`` span, started when the turn starts so LLM requests can point at it."""
    vad_start_secs: float = 0.0
    speech_end_ns: int | None = None
    # Speech edges: from the caller audio ("audio") or the VAD's own estimate ("vad"), and the VAD's.
    start_source: str = "vad"
    end_source: str = "vad"
    vad_onset_ns: int | None = None
    """VAD start − start_secs (on the audio position when the VAD tells it)."""
    vad_end_ns: int | None = None
    """VAD stop − stop_secs, of the turn's last VAD segment."""
    vad_events: list[tuple[int, bool]] = field(default_factory=list)
    """(when seen, speaking?) for each VAD change in the turn: when the pipeline knew."""
    vad_stop_secs: float = 0.0
    vad_stop_ns: int | None = None
    vad_segments: int = 1
    # Endpointing: when the turn model said "complete" (or the pipeline committed the turn).
    decided_ns: int | None = None
    committed_ns: int | None = None
    turn_probability: float | None = None
    turn_is_complete: bool | None = None
    turn_inference_ms: float | None = None
    incomplete_decisions_ns: list[tuple[int, float]] = field(default_factory=list)
    # ASR
    asr_start_ns: int | None = None
    asr_end_ns: int | None = None
    transcript: str = ""
    language: str | None = None
    interim_ns: list[tuple[int, str]] = field(default_factory=list)
    asr_stats: dict = field(default_factory=dict)
    """From a streaming ASR's final result: audio_s, tail_s, finalize_ms, confirmed_words."""
    # LLM: calls timed at the client when the service is instrumented, else seen from frames.
    llm_calls: list[LLMCall] = field(default_factory=list)
    frame_llms: list[LLMCall] = field(default_factory=list)
    llm_end_ns: int | None = None
    llm_open: bool = False
    """An LLM response has started and not ended (a tool's follow-up reopens the reply)."""
    # Tools
    tools: list[ToolRun] = field(default_factory=list)
    # TTS
    tts_start_ns: int | None = None
    tts_first_audio_ns: int | None = None
    tts_last_audio_ns: int | None = None
    tts_stopped_ns: int | None = None
    tts_characters: int = 0
    tts_audio_bytes: int = 0
    tts_sample_rate: int = 0
    tts_open: bool = False
    # Bot speech
    bot_start_ns: int | None = None
    bot_end_ns: int | None = None
    bot_audible_ns: int | None = None
    """First audible bot audio (bot_onset); bot_start_ns is when the first frame was handed to the transport."""
    bot_speaking: bool = False
    bot_audio_ns: int = 0
    """Time the bot was speaking, summed over its stretches (pauses inside the reply left out)."""
    last_output_ns: int | None = None
    """The latest bot-output frame of the turn: a finished-looking reply is held this long after."""
    interrupted: bool = False
    interrupted_by_onset_ns: int | None = None
    # Errors pipecat reported (ErrorFrame) per stage (asr, llm, tts, other): (ns, type, message).
    errors: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    _bot_stretch_start_ns: int = 0

    @property
    def committed(self) -> bool:
        return self.committed_ns is not None

    @property
    def reply_finished(self) -> bool:
        """The LLM is done, TTS has nothing pending and the bot has stopped talking — as far as
        pipecat's frames say: its TTS gives up on a context after seconds without audio and its
        output transport stops after a short silence, so the reply may still resume (the tracker
        holds the turn open a while, see ``REPLY_HANGOVER_NS``)."""
        return (
            self.llm_end_ns is not None
            and not self.llm_open
            and not self.tts_open
            and self.bot_end_ns is not None
            and not self.bot_speaking
        )

    @property
    def tts_audio_ms(self) -> float:
        if not self.tts_sample_rate:
            return 0.0
        return self.tts_audio_bytes / 2 / self.tts_sample_rate * 1000.0

    @property
    def llm_calls_to_emit(self) -> list[LLMCall]:
        """Client-timed calls when the service was instrumented; else the one seen from frames."""
        if self.llm_calls:
            return self.llm_calls
        return self.frame_llms

    def record_output(self, frame, t: int) -> bool:
        """Record one of the bot's OUTPUT_FRAMES at ``t``; True when a part of the reply ended
        (LLM, TTS or bot speech), so the reply may be over."""
        self.last_output_ns = t
        # Without an instrumented LLM service, the LLM's frames are the best client-side view:
        # LLMFullResponseStart is pushed just before the request, each LLMTextFrame per chunk.
        if isinstance(frame, LLMFullResponseStartFrame):
            # Each response is its own call (a tool's follow-up, or pipecat running the LLM again).
            self.frame_llms.append(LLMCall(request_ns=t))
            self.llm_open = True
        elif isinstance(frame, LLMTextFrame):
            if self.frame_llms and frame.text:
                self.frame_llms[-1].add_content(t, frame.text)
        elif isinstance(frame, LLMFullResponseEndFrame):
            self.llm_open = False
            if self.frame_llms:
                self.llm_end_ns = self.frame_llms[-1].end_ns = t
                return True
        elif isinstance(frame, TTSStartedFrame):
            self.tts_open = True
            if self.tts_start_ns is None:
                self.tts_start_ns = t
        elif isinstance(frame, TTSAudioRawFrame):
            if self.tts_start_ns is not None:
                if self.tts_first_audio_ns is None:
                    self.tts_first_audio_ns = t
                self.tts_last_audio_ns = t
                self.tts_audio_bytes += len(frame.audio) // max(1, frame.num_channels)
                self.tts_sample_rate = frame.sample_rate
        elif isinstance(frame, TTSTextFrame):
            self.tts_characters += len(frame.text)
        elif isinstance(frame, TTSStoppedFrame):
            self.tts_open = False
            self.tts_stopped_ns = t
            return True
        elif isinstance(frame, BotStartedSpeakingFrame) and not self.bot_speaking:
            self.bot_speaking = True
            self._bot_stretch_start_ns = t
            if self.bot_start_ns is None:
                self.bot_start_ns = t
        elif isinstance(frame, BotStoppedSpeakingFrame) and self.bot_speaking:
            self.bot_speaking = False
            self.bot_end_ns = t
            self.bot_audio_ns += t - self._bot_stretch_start_ns
            return True
        return False
