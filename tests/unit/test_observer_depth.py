"""Capture depth on a fake clock: client-timed LLM calls, llama.cpp server spans, tools,
streaming ASR stats, barge-in latency, redaction."""

from __future__ import annotations

import pytest
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    EndFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    StartFrame,
    TranscriptionFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)

from voicetrace import semconv as sc
from voicetrace.capture.content import redact

from tests.unit.test_observer import MS, Harness, audio, ms


async def speak_and_commit(h: Harness, t0: float, text: str = "claim 45712", result=None) -> None:
    await h.push(t0 + 200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(t0 + 2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(t0 + 2500, TranscriptionFrame(text=text, user_id="u", timestamp="", finalized=True, result=result))
    await h.push(t0 + 2510, UserStoppedSpeakingFrame())


@pytest.mark.asyncio
async def test_client_timed_llm_call_with_llama_cpp_timings():
    h = Harness()
    obs = h.observer
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0)
    await h.push(2520, LLMFullResponseStartFrame())
    call = obs.begin_llm_call(2530 * MS)
    traceparent = obs.llm_request_sent(call, 2540 * MS)
    assert traceparent.startswith("00-") and len(traceparent) == 55
    # A role-only chunk carries no content: the stream wrapper never records it.
    call.add_content(2700 * MS, "Your", 1)
    call.add_content(2720 * MS, " claim is", 2)  # one chunk, two tokens (timings_per_token said so)
    call.add_content(2740 * MS, " approved.", 1)
    call.end_ns = 2750 * MS
    call.input_tokens, call.output_tokens, call.finish_reason = 90, 4, "stop"
    call.server_timings = {"prompt_n": 12, "cache_n": 78, "prompt_ms": 100.0, "predicted_n": 4, "predicted_ms": 40.0}
    await h.push(2760, LLMFullResponseEndFrame())
    await h.push(2800, TTSStartedFrame())
    await h.push(2900, audio())
    await h.push(2910, BotStartedSpeakingFrame())
    await h.push(3000, TTSStoppedFrame())
    await h.push(4000, BotStoppedSpeakingFrame())
    await h.push(9000, EndFrame())

    llm = h.one(sc.SPAN_LLM)
    assert f"{llm.context.span_id:016x}" in traceparent
    assert (ms(llm.start_time), ms(llm.end_time)) == (2540, 2750)
    assert llm.attributes[sc.ATTR_LLM_TTFT_MS] == 160
    assert llm.attributes[sc.ATTR_LLM_PREPARE_MS] == 10
    assert llm.attributes[sc.ATTR_LLM_TPOT_MS] == 40 / 3  # (2740 − 2700) / (4 tokens − 1)
    assert llm.attributes[sc.ATTR_GENAI_OUTPUT_TOKENS] == 4
    assert llm.attributes[sc.ATTR_GENAI_INPUT_TOKENS] == 90
    counts = [(e.attributes or {}).get(sc.ATTR_TOKEN_COUNT, 1) for e in llm.events if e.name == sc.EVENT_TOKEN]
    assert counts == [1, 2, 1]
    prefill, decode = h.one(sc.SPAN_LLM_PREFILL), h.one(sc.SPAN_LLM_DECODE)
    assert prefill.parent.span_id == llm.context.span_id
    # prefill ends at the first token; decode ends at the last: durations from the server.
    assert (ms(prefill.start_time), ms(prefill.end_time)) == (2600, 2700)
    assert (ms(decode.start_time), ms(decode.end_time)) == (2700, 2740)
    assert prefill.attributes[sc.ATTR_SERVER_CACHE_N] == 78
    assert prefill.attributes[sc.ATTR_SERVER_CLAMPED] is False


@pytest.mark.asyncio
async def test_server_time_longer_than_the_client_saw_is_clamped_and_flagged():
    h = Harness()
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0)
    call = h.observer.begin_llm_call(2530 * MS)
    h.observer.llm_request_sent(call, 2540 * MS)
    call.add_content(2600 * MS, "Hi.")
    call.end_ns = 2610 * MS
    call.server_timings = {"prompt_n": 500, "cache_n": 0, "prompt_ms": 400.0, "predicted_n": 1, "predicted_ms": 1.0}
    await h.push(9000, EndFrame())
    prefill = h.one(sc.SPAN_LLM_PREFILL)
    assert (ms(prefill.start_time), ms(prefill.end_time)) == (2540, 2600)
    assert prefill.attributes[sc.ATTR_SERVER_CLAMPED] is True


@pytest.mark.asyncio
async def test_tool_runs_are_spans_under_their_turn_or_the_call():
    h = Harness(capture_content=False)
    await h.push(0, StartFrame())
    at_start = h.observer.begin_tool("lookup_policy", "{}", "call_start", 5 * MS)
    at_start.end_ns, at_start.result_chars = 7 * MS, 240
    await speak_and_commit(h, 0)
    run = h.observer.begin_tool("get_claim_status", '{"claim_id": "45712"}', "intent", 2515 * MS)
    run.end_ns, run.result_chars = 2518 * MS, 172
    failed = h.observer.begin_tool("update_address", "{}", "function_call", 2520 * MS)
    failed.end_ns, failed.error = 2521 * MS, "ToolError"
    await h.push(9000, EndFrame())
    conversation, turn = h.one(sc.SPAN_CONVERSATION), h.one(sc.SPAN_TURN)
    lookup = h.one("tool.lookup_policy")
    assert lookup.parent.span_id == conversation.context.span_id
    status = h.one("tool.get_claim_status")
    assert status.parent.span_id == turn.context.span_id
    assert (ms(status.start_time), ms(status.end_time)) == (2515, 2518)
    assert status.attributes[sc.ATTR_TOOL_TRIGGER] == "intent"
    assert status.attributes[sc.ATTR_TOOL_RESULT_CHARS] == 172
    assert sc.ATTR_TOOL_ARGUMENTS not in status.attributes  # content capture is off
    assert not h.one("tool.update_address").status.is_ok


@pytest.mark.asyncio
async def test_streaming_asr_result_spans_the_utterance_and_carries_its_stats():
    h = Harness()
    await h.push(0, StartFrame())
    stats = {"voicetrace": True, "audio_s": 2.3, "tail_s": 0.6, "confirmed_words": 4, "finalize_ms": 180.0}
    await speak_and_commit(h, 0, result=stats)
    await h.push(9000, EndFrame())
    asr = h.one(sc.SPAN_ASR)
    assert (ms(asr.start_time), ms(asr.end_time)) == (0, 2500)  # listening since the onset
    assert asr.attributes[sc.ATTR_ASR_MODE] == "streaming"
    assert asr.attributes[sc.ATTR_ASR_TAIL_MS] == 600
    assert asr.attributes[sc.ATTR_ASR_FINALIZE_MS] == 180


@pytest.mark.asyncio
async def test_barge_in_latency_and_unspoken_tokens():
    h = Harness()
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0)
    await h.push(2520, LLMFullResponseStartFrame())
    for i in range(10):
        await h.push(2600 + i * 10, LLMTextFrame(f" w{i}"))
    await h.push(2700, LLMFullResponseEndFrame())
    await h.push(2710, TTSStartedFrame())
    await h.push(2800, audio(4000))  # 4 s of speech synthesised
    await h.push(2810, BotStartedSpeakingFrame())
    # The caller cuts in: VAD fires at 3810 (onset 3610); the bot stops at 3830 after 1 s of 4.
    await h.push(3810, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(3830, BotStoppedSpeakingFrame())
    await h.push(9000, EndFrame())
    bot = h.one(sc.SPAN_BOT_SPEECH)
    assert bot.attributes[sc.ATTR_BOT_INTERRUPTED] is True
    assert bot.attributes[sc.ATTR_BOT_INTERRUPTION_LATENCY_MS] == 220
    assert bot.attributes[sc.ATTR_BOT_UNSPOKEN_TOKENS] == round(10 * (1 - 1020 / 4000))


def test_redact_masks_digit_runs_and_emails():
    assert redact("claim 45712, mail jo.lee+x@example.co.uk") == "claim #####, mail <email>"


@pytest.mark.asyncio
async def test_redaction_applies_to_every_text_attribute():
    h = Harness(redact=True)
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0, text="my claim is 45712")
    run = h.observer.begin_tool("get_claim_status", '{"claim_id": "45712"}', "intent", 2515 * MS)
    run.end_ns = 2516 * MS
    await h.push(9000, EndFrame())
    assert h.one(sc.SPAN_ASR).attributes[sc.ATTR_ASR_TRANSCRIPT] == "my claim is #####"
    assert h.one("tool.get_claim_status").attributes[sc.ATTR_TOOL_ARGUMENTS] == '{"claim_id": "#####"}'


def test_capture_follows_the_standard_env_variable(monkeypatch):
    from voicetrace.capture.content import CAPTURE_ENV, ContentPolicy

    monkeypatch.setenv(CAPTURE_ENV, "true")
    assert ContentPolicy.from_flags(None).capture is True
    monkeypatch.setenv(CAPTURE_ENV, "false")
    assert ContentPolicy.from_flags(None).capture is False
    assert ContentPolicy.from_flags(True).capture is True


@pytest.mark.asyncio
async def test_each_vad_change_counts_once_though_pipecat_announces_it_twice():
    h = Harness()
    await h.push(0, StartFrame())
    await h.push(1200, VADUserStartedSpeakingFrame(start_secs=0.2))  # pushed upstream at once
    await h.push(1205, VADUserStartedSpeakingFrame(start_secs=0.2))  # the queued downstream copy
    await h.push(3200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(3300, VADUserStoppedSpeakingFrame(stop_secs=0.2))  # late copy: must not move the end
    await h.push(3400, UserStoppedSpeakingFrame())
    await h.push(9000, EndFrame())
    speech = h.one(sc.SPAN_USER_SPEECH)
    assert (ms(speech.start_time), ms(speech.end_time)) == (1000, 3000)
    assert speech.attributes[sc.ATTR_VAD_SEGMENTS] == 1


class FakePositions:
    """Audio positions (s) of VAD changes, as AudioPositionMixin queues them."""

    def __init__(self, starts, stops):
        self.starts, self.stops = list(starts), list(stops)

    def pop_position_s(self, speaking):
        queue = self.starts if speaking else self.stops
        return queue.pop(0) if queue else None


@pytest.mark.asyncio
async def test_speech_edges_come_from_the_audio_position_when_the_pipeline_lags():
    h = Harness()
    h.observer.use_vad_positions(FakePositions(starts=[1.2], stops=[3.0]))
    await h.push(0, StartFrame())
    h.observer.start_conversation(500 * MS)  # call time zero: first frame fed, after warm-up
    # The pipeline runs 700 ms behind the audio: frames say 2400 / 4200, the audio says 1.2 s / 3.0 s.
    await h.push(2400, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(4200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(4400, UserStoppedSpeakingFrame())
    await h.push(9000, EndFrame())
    conversation, speech = h.one(sc.SPAN_CONVERSATION), h.one(sc.SPAN_USER_SPEECH)
    assert ms(conversation.start_time) == 500
    assert (ms(speech.start_time), ms(speech.end_time)) == (500 + 1000, 500 + 2800)


def test_audio_position_mixin_mirrors_pipecat_announcements():
    import asyncio

    import numpy as np

    from voicetrace.pipelines.reference import PipelineConfig, build_vad

    vad = build_vad(PipelineConfig(llm_base_url="", llm_model="", asr_model_path=""))
    vad.set_sample_rate(16000)
    rng = np.random.default_rng(3)
    silence = np.zeros(320, np.int16).tobytes()
    t = np.arange(320) / 16000
    # A voiced-ish signal: harmonics of 150 Hz with noise, loud enough for WebRTC VAD.
    voiced = lambda k: (8000 * np.sin(2 * np.pi * 150 * (t + k * 0.02)) + 3000 * np.sin(2 * np.pi * 450 * (t + k * 0.02))
                        + rng.normal(0, 300, 320)).astype(np.int16).tobytes()
    frames = [silence] * 50 + [voiced(k) for k in range(100)] + [silence] * 50  # speech 1.0 s → 3.0 s
    loop = asyncio.new_event_loop()
    try:
        for frame in frames:
            loop.run_until_complete(vad.analyze_audio(frame))
    finally:
        loop.close()
    start, stop = vad.pop_position_s(True), vad.pop_position_s(False)
    assert 1.2 <= start <= 1.35  # declared start_secs (+ pipecat's volume smoothing) after the onset
    assert 3.2 <= stop <= 3.4  # declared stop_secs (+ WebRTC VAD's own hangover) after the end
    assert vad.pop_position_s(True) is None
