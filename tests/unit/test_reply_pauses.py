"""A reply that pauses and resumes stays in its turn (fake clock, the frame orders pipecat gives under load).

pipecat's TTS closes an audio context after 3 s without audio (``stop_frame_timeout_s``) and pushes a
TTSStoppedFrame; the output transport then says BotStoppedSpeaking. When the LLM is slow (or the TTS
is), the rest of the reply comes after that: a new TTSStartedFrame (or audio on a recreated context)
and BotStartedSpeaking again. That audio is the turn's: its bot.speech runs to the last audio played.
"""

from __future__ import annotations

import pytest
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    StartFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)

from voicetrace import semconv as sc
from voicetrace.capture.turn_tracker import REPLY_HANGOVER_NS

from tests.unit.test_observer import Harness, audio, ms

HANGOVER_MS = REPLY_HANGOVER_NS / 1_000_000


def caller_audio() -> InputAudioRawFrame:
    """The line keeps flowing (a replay feeds silence; a live call its microphone)."""
    return InputAudioRawFrame(audio=b"\x00\x00" * 320, sample_rate=16000, num_channels=1)


async def commit_turn(h: Harness) -> None:
    await h.push(0, StartFrame())
    await h.push(200, VADUserStartedSpeakingFrame(start_secs=0.2))  # onset 0
    await h.push(2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))  # speech end 2000
    await h.push(2300, UserStoppedSpeakingFrame())
    await h.push(2400, LLMFullResponseStartFrame())
    await h.push(2500, LLMTextFrame("Hello, I'm here to help."))
    await h.push(2600, TTSStartedFrame())
    await h.push(2800, audio(1000))
    await h.push(2810, BotStartedSpeakingFrame())


async def quiet_until(h: Harness, start_ms: float, end_ms: float) -> None:
    t = start_ms
    while t <= end_ms:
        await h.push(t, caller_audio())
        t += 20


@pytest.mark.asyncio
async def test_rest_of_the_reply_after_the_tts_context_timed_out_on_a_slow_llm_stays_in_the_turn():
    """The order seen in a loaded run: the LLM stalls mid-reply, TTS times out, the bot stops, then
    the LLM ends and TTS speaks the last sentence."""
    h = Harness()
    await commit_turn(h)
    await h.push(6800, TTSStoppedFrame())  # 3 s without audio: pipecat gives up on the context
    await h.push(6810, BotStoppedSpeakingFrame())
    await h.push(7000, LLMTextFrame(" What's your claim number?"))
    await h.push(7010, LLMFullResponseEndFrame())  # looks over: LLM done, TTS stopped, bot silent
    await h.push(7020, TTSStartedFrame())  # TTS flushes the last sentence into a new context
    await h.push(7400, audio(1500))
    await h.push(7410, BotStartedSpeakingFrame())
    await h.push(7500, TTSStoppedFrame())
    await h.push(8920, BotStoppedSpeakingFrame())
    await h.push(20_000, EndFrame())

    bot = h.one(sc.SPAN_BOT_SPEECH)
    assert (ms(bot.start_time), ms(bot.end_time)) == (2810, 8920)  # first audio played → last
    assert bot.attributes[sc.ATTR_BOT_AUDIO_MS] == (6810 - 2810) + (8920 - 7410)  # the pause was not audio
    tts = h.one(sc.SPAN_TTS)
    assert (ms(tts.start_time), ms(tts.end_time)) == (2600, 7400)
    assert tts.attributes[sc.ATTR_TTS_AUDIO_MS] == 2500
    assert ms(h.one(sc.SPAN_TURN).end_time) == 8920


@pytest.mark.asyncio
async def test_audio_after_the_bot_stopped_with_the_llm_done_stays_in_the_turn():
    """LLM end → TTS stopped → bot stopped → more audio and bot started → bot stopped (a TTS slower
    than its 3 s context timeout: the audio comes on a recreated context, with no TTSStartedFrame)."""
    h = Harness()
    await commit_turn(h)
    await h.push(2900, LLMFullResponseEndFrame())
    await h.push(6800, TTSStoppedFrame())
    await h.push(6810, BotStoppedSpeakingFrame())
    await quiet_until(h, 6820, 6810 + HANGOVER_MS - 20)
    assert h.spans(sc.SPAN_TURN) == [] and h.observer.open_turns == 1  # held: the reply may go on
    await h.push(6810 + HANGOVER_MS - 10, audio(1000))
    await h.push(6810 + HANGOVER_MS, BotStartedSpeakingFrame())
    await h.push(6810 + HANGOVER_MS + 1000, BotStoppedSpeakingFrame())
    end_ms = 6810 + HANGOVER_MS + 1000
    await quiet_until(h, end_ms + 20, end_ms + HANGOVER_MS + 20)

    # Written once the line stayed quiet for the hangover, before the call ends.
    assert h.observer.open_turns == 0 and h.observer.turns_completed == 1
    bot = h.one(sc.SPAN_BOT_SPEECH)
    assert (ms(bot.start_time), ms(bot.end_time)) == (2810, end_ms)
    assert ms(h.one(sc.SPAN_TTS).end_time) == 6810 + HANGOVER_MS - 10


@pytest.mark.asyncio
async def test_a_held_reply_ends_when_the_caller_speaks_again():
    h = Harness()
    await commit_turn(h)
    await h.push(2900, LLMFullResponseEndFrame())
    await h.push(3000, TTSStoppedFrame())
    await h.push(3810, BotStoppedSpeakingFrame())
    assert h.observer.open_turns == 1
    await h.push(4500, VADUserStartedSpeakingFrame(start_secs=0.2))  # within the hangover
    (turn,) = h.spans(sc.SPAN_TURN)
    assert turn.attributes[sc.ATTR_TURN_INTERRUPTED] is False  # spoke after the reply, not over it
    # The caller's new turn is listening: its request is its own, not the held reply's.
    call = h.observer.begin_llm_call(4600 * 1_000_000)
    assert call is not None and h.observer.turns[1].llm_calls == [call]


@pytest.mark.asyncio
async def test_a_second_llm_response_in_the_turn_keeps_it_open_until_that_reply_is_spoken():
    """e.g. a tool's follow-up: the first response ended and was spoken, the next one starts."""
    h = Harness()
    await commit_turn(h)
    await h.push(2900, LLMFullResponseEndFrame())
    await h.push(3000, TTSStoppedFrame())
    await h.push(3810, BotStoppedSpeakingFrame())
    await h.push(4000, LLMFullResponseStartFrame())
    await quiet_until(h, 4020, 4000 + HANGOVER_MS + 500)
    assert h.observer.open_turns == 1  # the second response has not ended
    await h.push(7000, LLMTextFrame("Your claim is approved."))
    await h.push(7010, LLMFullResponseEndFrame())
    await h.push(7020, TTSStartedFrame())
    await h.push(7200, audio(1000))
    await h.push(7210, BotStartedSpeakingFrame())
    await h.push(7300, TTSStoppedFrame())
    await h.push(8210, BotStoppedSpeakingFrame())
    await h.push(20_000, EndFrame())
    bot = h.one(sc.SPAN_BOT_SPEECH)
    assert (ms(bot.start_time), ms(bot.end_time)) == (2810, 8210)
    assert len(h.spans(sc.SPAN_TURN)) == 1
