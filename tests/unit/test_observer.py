"""The observer, fed a scripted frame sequence on a fake clock, writes exactly the expected spans."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    MetricsFrame,
    StartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import TurnMetricsData
from pipecat.observers.base_observer import FramePushed
from pipecat.processors.frame_processor import FrameDirection

from voicetrace import semconv as sc
from voicetrace.capture.observer import VoiceTraceObserver
from voicetrace.clock import FakeClock

MS = 1_000_000
WALL0 = 1_700_000_000_000_000_000


class Harness:
    def __init__(self, capture_content: bool = True, **observer_options) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.observer = VoiceTraceObserver(
            tracer_provider=provider,
            clock=FakeClock(WALL0),
            capture_content=capture_content,
            conversation_id="call-1",
            frame_time_ns=lambda data: data.timestamp,
            **observer_options,
        )

    async def push(self, at_ms: float, frame, source=None) -> None:
        await self.observer.on_push_frame(
            FramePushed(source=source, destination=None, frame=frame, direction=FrameDirection.DOWNSTREAM,
                        timestamp=int(at_ms * MS))
        )

    def spans(self, name: str):
        return [s for s in self.exporter.get_finished_spans() if s.name == name]

    def one(self, name: str):
        (span,) = self.spans(name)
        return span


def ms(wall_ns: int) -> float:
    return (wall_ns - WALL0) / MS


def audio(ms_long: int = 100) -> TTSAudioRawFrame:
    return TTSAudioRawFrame(audio=b"\x01\x00" * (16 * ms_long), sample_rate=16000, num_channels=1)


async def play_turn(h: Harness, t0: float, text: str = "my claim number") -> None:
    """One complete turn starting at t0 (ms): speech 200..2200 after t0, reply at +3110."""
    await h.push(t0 + 200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(t0 + 2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(t0 + 2300, MetricsFrame(data=[TurnMetricsData(processor="t", is_complete=True, probability=0.9, e2e_processing_time_ms=95.0)]))
    await h.push(t0 + 2700, TranscriptionFrame(text=text, user_id="u", timestamp="", finalized=False))
    await h.push(t0 + 2710, UserStoppedSpeakingFrame())
    await h.push(t0 + 2720, LLMFullResponseStartFrame())
    await h.push(t0 + 2900, LLMTextFrame("Your"))
    await h.push(t0 + 2910, LLMTextFrame(" claim"))
    await h.push(t0 + 2925, LLMTextFrame(" is open."))
    await h.push(t0 + 2930, TTSStartedFrame())
    await h.push(t0 + 2940, LLMFullResponseEndFrame())
    await h.push(t0 + 3100, audio())
    await h.push(t0 + 3110, BotStartedSpeakingFrame())
    await h.push(t0 + 3300, audio())
    await h.push(t0 + 3400, TTSStoppedFrame())
    await h.push(t0 + 5000, BotStoppedSpeakingFrame())


@pytest.mark.asyncio
async def test_one_turn_gives_exact_stage_spans():
    h = Harness()
    await h.push(0, StartFrame())
    await play_turn(h, 800)
    await h.push(9000, EndFrame())

    conv = h.one(sc.SPAN_CONVERSATION)
    turn = h.one(sc.SPAN_TURN)
    assert (ms(conv.start_time), ms(conv.end_time)) == (0, 9000)
    assert turn.parent.span_id == conv.context.span_id
    assert (ms(turn.start_time), ms(turn.end_time)) == (800, 5800)
    expected = {
        # VAD start at 1000 declared after 0.2 s of speech: onset 800; stop at 3000 after 0.2 s silence.
        sc.SPAN_USER_SPEECH: (800, 2800),
        sc.SPAN_ENDPOINTING: (2800, 3100),
        sc.SPAN_ASR: (3000, 3500),
        sc.SPAN_LLM: (3520, 3740),
        sc.SPAN_TTS: (3730, 4100),
        sc.SPAN_BOT_SPEECH: (3910, 5800),
    }
    for name, (start, end) in expected.items():
        span = h.one(name)
        assert span.parent.span_id == turn.context.span_id, name
        assert (ms(span.start_time), ms(span.end_time)) == (start, end), name

    llm = h.one(sc.SPAN_LLM)
    assert llm.attributes[sc.ATTR_LLM_TTFT_MS] == 180
    assert llm.attributes[sc.ATTR_LLM_TPOT_MS] == 12.5
    assert llm.attributes[sc.ATTR_GENAI_OUTPUT_TOKENS] == 3
    assert [ms(e.timestamp) for e in llm.events if e.name == sc.EVENT_TOKEN] == [3700, 3710, 3725]
    assert [ms(e.timestamp) for e in llm.events if e.name == sc.EVENT_FIRST_TOKEN] == [3700]
    tts = h.one(sc.SPAN_TTS)
    assert tts.attributes[sc.ATTR_TTS_TTFB_MS] == 170
    assert tts.attributes[sc.ATTR_TTS_AUDIO_MS] == 200
    endpointing = h.one(sc.SPAN_ENDPOINTING)
    assert endpointing.attributes[sc.ATTR_TURN_PROBABILITY] == 0.9
    assert endpointing.attributes[sc.ATTR_VAD_STOP_SECS] == 0.2
    assert h.one(sc.SPAN_ASR).attributes[sc.ATTR_ASR_TRANSCRIPT] == "my claim number"
    assert turn.attributes[sc.ATTR_TURN_INTERRUPTED] is False


@pytest.mark.asyncio
async def test_content_is_not_recorded_by_default():
    h = Harness(capture_content=False)
    await h.push(0, StartFrame())
    await play_turn(h, 0, text="my card is 4111")
    await h.push(9000, EndFrame())
    asr = h.one(sc.SPAN_ASR)
    assert sc.ATTR_ASR_TRANSCRIPT not in asr.attributes
    assert asr.attributes[sc.ATTR_ASR_TRANSCRIPT_CHARS] == len("my card is 4111")
    assert sc.ATTR_LLM_OUTPUT not in h.one(sc.SPAN_LLM).attributes


@pytest.mark.asyncio
async def test_turn_spans_are_written_when_the_reply_ends_not_at_call_end():
    from voicetrace.capture.turn_tracker import REPLY_HANGOVER_NS

    h = Harness()
    await h.push(0, StartFrame())
    await play_turn(h, 0)  # the bot stops at 5000: the reply looks over, and may yet resume
    assert h.spans(sc.SPAN_TURN) == [] and h.observer.open_turns == 1
    quiet = InputAudioRawFrame(audio=b"\x00\x00" * 320, sample_rate=16000, num_channels=1)
    await h.push(5000 + REPLY_HANGOVER_NS / MS, quiet)  # the line stayed quiet for the hangover
    assert len(h.spans(sc.SPAN_TURN)) == 1
    assert h.observer.turns_completed == 1
    assert h.spans(sc.SPAN_CONVERSATION) == []


@pytest.mark.asyncio
async def test_pause_before_commit_stays_one_turn_and_incomplete_verdict_is_an_event():
    h = Harness()
    await h.push(0, StartFrame())
    await h.push(1200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(2280, MetricsFrame(data=[TurnMetricsData(processor="t", is_complete=False, probability=0.2, e2e_processing_time_ms=80.0)]))
    await h.push(2600, TranscriptionFrame(text="the number is", user_id="u", timestamp=""))
    await h.push(2900, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(4000, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(4090, MetricsFrame(data=[TurnMetricsData(processor="t", is_complete=True, probability=0.8, e2e_processing_time_ms=90.0)]))
    await h.push(4400, TranscriptionFrame(text="four five", user_id="u", timestamp=""))
    await h.push(4410, UserStoppedSpeakingFrame())
    await h.push(9000, EndFrame())
    (turn,) = h.spans(sc.SPAN_TURN)
    speech = h.one(sc.SPAN_USER_SPEECH)
    assert (ms(speech.start_time), ms(speech.end_time)) == (1000, 3800)
    assert speech.attributes[sc.ATTR_VAD_SEGMENTS] == 2
    endpointing = h.one(sc.SPAN_ENDPOINTING)
    assert (ms(endpointing.start_time), ms(endpointing.end_time)) == (3800, 4090)
    assert [(e.name, ms(e.timestamp)) for e in endpointing.events] == [("turn.incomplete", 2280)]
    assert h.one(sc.SPAN_ASR).attributes[sc.ATTR_ASR_TRANSCRIPT] == "the number is four five"


@pytest.mark.asyncio
async def test_commit_without_complete_verdict_is_the_decision():
    """Smart-turn's silence fallback commits the turn without a 'complete' metrics frame."""
    h = Harness()
    await h.push(0, StartFrame())
    await h.push(1200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(2280, MetricsFrame(data=[TurnMetricsData(processor="t", is_complete=False, probability=0.1, e2e_processing_time_ms=80.0)]))
    await h.push(2500, TranscriptionFrame(text="hello", user_id="u", timestamp=""))
    await h.push(5000, UserStoppedSpeakingFrame())
    await h.push(9000, EndFrame())
    endpointing = h.one(sc.SPAN_ENDPOINTING)
    assert (ms(endpointing.start_time), ms(endpointing.end_time)) == (2000, 5000)


@pytest.mark.asyncio
async def test_barge_in_marks_the_answered_turn_interrupted():
    h = Harness()
    await h.push(0, StartFrame())
    await h.push(200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(2300, UserStoppedSpeakingFrame())
    await h.push(2400, LLMFullResponseStartFrame())
    await h.push(2500, LLMTextFrame("Hello"))
    await h.push(2600, TTSStartedFrame())
    await h.push(2700, audio())
    await h.push(2710, BotStartedSpeakingFrame())
    await h.push(4000, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(4050, BotStoppedSpeakingFrame())
    await h.push(9000, EndFrame())
    turns = sorted(h.spans(sc.SPAN_TURN), key=lambda s: s.start_time)
    assert [t.attributes[sc.ATTR_TURN_INTERRUPTED] for t in turns] == [True]
    bot = h.one(sc.SPAN_BOT_SPEECH)
    assert (ms(bot.start_time), ms(bot.end_time)) == (2710, 4050)
    assert bot.attributes[sc.ATTR_BOT_INTERRUPTED] is True
    # The caller's new speech (no end before the call ended) is not a measurable turn.
    assert h.observer.turns_completed == 1


@pytest.mark.asyncio
async def test_output_transport_rechunked_audio_is_not_tts_output():
    from pipecat.transports.base_output import BaseOutputTransport
    from pipecat.transports.base_transport import TransportParams

    h = Harness()
    output = BaseOutputTransport(TransportParams())
    await h.push(0, StartFrame())
    await h.push(200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(2300, UserStoppedSpeakingFrame())
    await h.push(2400, LLMFullResponseStartFrame())
    await h.push(2500, LLMTextFrame("Hi."))
    await h.push(2510, LLMFullResponseEndFrame())
    await h.push(2600, TTSStartedFrame())
    await h.push(2700, audio(100))
    await h.push(2705, BotStartedSpeakingFrame())
    await h.push(2800, audio(40), source=output)
    await h.push(2900, TTSStoppedFrame())
    await h.push(3000, BotStoppedSpeakingFrame())
    await h.push(9000, EndFrame())
    tts = h.one(sc.SPAN_TTS)
    assert ms(tts.end_time) == 2700
    assert tts.attributes[sc.ATTR_TTS_AUDIO_MS] == 100
