"""The turn tracker on its own (no OpenTelemetry): which turn owns an LLM call, a tool run, bot
output and an error — in particular when the caller speaks again while a reply is being made."""

from __future__ import annotations

import subprocess
import sys

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    ErrorFrame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TranscriptionFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)

from voicetrace.capture.sinks import LLMCall, ToolRun
from voicetrace.capture.turn_tracker import REPLY_HANGOVER_NS, TurnTracker, Work

MS = 1_000_000


class Script:
    """A tracker fed frames at given milliseconds; records which turns closed."""

    def __init__(self) -> None:
        self.started, self.closed = [], []
        self.tracker = TurnTracker(on_turn_started=lambda rec, t: self.started.append(rec.number),
                                   on_turn_closed=lambda rec: self.closed.append(rec.number))

    def at(self, ms: float, *frames) -> None:
        for frame in frames:
            self.tracker.on_frame(frame, int(ms * MS))

    def speak(self, start_ms: float, stop_ms: float) -> None:
        self.at(start_ms, VADUserStartedSpeakingFrame(start_secs=0.2))
        self.at(stop_ms, VADUserStoppedSpeakingFrame(stop_secs=0.2))

    def turn(self, start_ms: float, commit_ms: float) -> None:
        self.speak(start_ms, commit_ms - 300)
        self.at(commit_ms - 100, TranscriptionFrame(text="hello", user_id="u", timestamp=""))
        self.at(commit_ms, UserStoppedSpeakingFrame())

    def llm_call(self, ms: float) -> int | None:
        """Which turn an instrumented LLM call made now belongs to (None: not recorded)."""
        rec = self.tracker.add_llm_call(LLMCall(request_ns=int(ms * MS)))
        return rec.number if rec else None

    def tool(self, ms: float) -> int | None:
        """Which turn a tool run started now belongs to (None: the call)."""
        rec = self.tracker.add_tool(ToolRun("lookup", int(ms * MS)))
        return rec.number if rec else None


def test_imports_without_opentelemetry():
    code = ("import sys, voicetrace.capture.turn_tracker, voicetrace.capture.sinks, voicetrace.tools.runner; "
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_llm_call_made_after_the_caller_speaks_again_belongs_to_the_turn_it_answers():
    s = Script()
    s.turn(0, 2000)  # turn 1 committed at 2000
    assert s.llm_call(2010) == 1
    s.at(2300, VADUserStartedSpeakingFrame(start_secs=0.2))  # the caller speaks while the reply is made
    assert s.tracker.listening().number == 2 and s.tracker.answered().number == 1
    # e.g. the follow-up request after a tool result: still turn 1's reply, not the new turn's
    assert s.llm_call(2400) == 1
    assert [len(r.llm_calls) for r in s.tracker.turns] == [2, 0]
    s.at(3500, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    s.at(3800, UserStoppedSpeakingFrame())  # turn 2 committed: turn 1 is over
    assert s.closed == [1]
    assert s.llm_call(3810) == 2


def test_a_tool_run_started_after_the_caller_speaks_again_belongs_to_the_turn_it_answers():
    s = Script()
    assert s.tool(5) is None  # at call start, before any turn: the call's
    s.turn(0, 2000)
    assert s.tool(2005) == 1
    s.at(2300, VADUserStartedSpeakingFrame(start_secs=0.2))
    assert s.tool(2400) == 1
    assert [r.name for r in s.tracker.call_tools] == ["lookup"]
    assert [len(r.tools) for r in s.tracker.turns] == [2, 0]


def test_a_request_before_the_commit_is_seen_goes_to_the_listening_turn():
    """pipecat may start inference before the turn stop, and the observer sees the commit late."""
    s = Script()
    s.speak(0, 1700)
    assert s.tracker.answered() is None
    assert s.llm_call(1750) == 1 and s.tool(1751) == 1
    s.at(2000, UserStoppedSpeakingFrame())
    assert s.tracker.turns[0].committed and len(s.tracker.turns[0].llm_calls) == 1


def test_a_request_with_no_open_turn_is_not_a_turn_s():
    s = Script()
    assert s.llm_call(10) is None  # e.g. a greeting before the caller spoke
    s.turn(0, 2000)
    s.at(2100, LLMFullResponseStartFrame(), LLMTextFrame("Hi."), LLMFullResponseEndFrame(), TTSStartedFrame())
    s.at(2200, BotStartedSpeakingFrame(), TTSStoppedFrame())
    s.at(3000, BotStoppedSpeakingFrame())
    assert s.closed == []  # the reply looks over; it is held in case it resumes
    s.at(3000 + REPLY_HANGOVER_NS / MS, InputAudioRawFrame(audio=b"\0\0" * 320, sample_rate=16000, num_channels=1))
    assert s.closed == [1] and s.tracker.open == []
    assert s.llm_call(5600) is None and s.tool(5600) is None


def test_bot_output_goes_to_the_answered_turn_only():
    s = Script()
    s.at(100, TTSStartedFrame())  # a greeting: no committed turn
    s.at(600, VADUserStartedSpeakingFrame(start_secs=0.2))  # the caller talks over the greeting
    s.at(700, BotStartedSpeakingFrame())
    s.at(900, BotStoppedSpeakingFrame(), TTSStoppedFrame())
    s.turn(1000, 3000)  # its VAD start is the second copy of the one at 600: the same turn
    s.at(3100, LLMFullResponseStartFrame(), LLMTextFrame("Sure"))
    s.at(3200, VADUserStartedSpeakingFrame(start_secs=0.2))  # caller speaks; turn 2 listening
    s.at(3300, LLMTextFrame(" thing."), TTSStartedFrame())
    first, second = s.tracker.turns
    assert first.bot_start_ns is None and first.tts_stopped_ns is None  # the greeting was no turn's
    assert first.tts_start_ns == 3300 * MS
    assert first.speech_start_ns == 400 * MS and first.vad_segments == 1
    assert first.frame_llms[0].text == "Sure thing." and second.frame_llms == []
    assert first.interrupted and first.interrupted_by_onset_ns == 3000 * MS


def test_an_error_belongs_to_the_answered_turn_else_the_listening_one():
    s = Script()
    s.speak(0, 1700)
    s.tracker.on_frame(ErrorFrame(error="asr broke"), 1750 * MS)
    s.at(2000, UserStoppedSpeakingFrame())
    s.at(2100, VADUserStartedSpeakingFrame(start_secs=0.2))
    s.tracker.add_error("llm", 2200 * MS, "APIError", "boom")
    first, second = s.tracker.turns
    assert first.errors == {"other": (1750 * MS, "ErrorFrame", "asr broke"), "llm": (2200 * MS, "APIError", "boom")}
    assert second.errors == {}


def test_caller_frames_go_to_the_listening_turn_and_a_late_transcript_to_the_newest():
    s = Script()
    s.turn(0, 2000)
    s.at(2050, TranscriptionFrame(text="again", user_id="u", timestamp=""))  # segmented ASR, after the commit
    assert s.tracker.turns[0].transcript == "hello again"
    assert s.tracker.owner(Work.CALLER) is None
    s.at(2100, VADUserStartedSpeakingFrame(start_secs=0.2))
    assert s.tracker.owner(Work.CALLER).number == 2 and s.started == [1, 2]
