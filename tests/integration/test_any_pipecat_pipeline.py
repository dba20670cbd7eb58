"""VoiceTraceObserver dropped into a pipecat pipeline other than the reference one gives the same
span tree: Silero VAD, pipecat's own segmented Whisper service with a speech-timeout turn end (no
smart-turn), an LLM on a different OpenAI-compatible server (the scripted local one), Piper.
Wired the way the README shows, without any of voicetrace's service instrumentation."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from opentelemetry import trace

from voicetrace import CallTrace, components
from voicetrace import semconv as sc
from voicetrace.audio.recorder import CallRecorder
from voicetrace.audio.source import iter_pipeline_frames, open_call
from voicetrace.capture import VoiceTraceObserver
from voicetrace.pipelines.file_transport import CallTimeline, FileInputTransport, PacedOutputTransport
from voicetrace.servers.scripted_llm import Reply, Script, ScriptedLLMServer
from voicetrace.traces.files import read_trace_files

from tests.conftest import SAMPLES

pytestmark = pytest.mark.integration


async def run_other_pipeline(call_path: Path, llm_url: str, trace_path: Path, run_dir: Path) -> VoiceTraceObserver:
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair, LLMUserAggregatorParams
    from pipecat.services.openai.llm import OpenAILLMService
    from pipecat.services.piper.tts import PiperTTSService
    from pipecat.services.whisper.stt import WhisperSTTService
    from pipecat.transcriptions.language import Language
    from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import SpeechTimeoutUserTurnStopStrategy
    from pipecat.turns.user_turn_strategies import UserTurnStrategies
    from pipecat.workers.runner import WorkerRunner

    vt = CallTrace(trace_path, service_name="other-agent", capture_content=True, otlp=False).open()
    observer = vt.observer

    call = open_call(call_path)
    timeline, recorder, worker = CallTimeline(), CallRecorder(run_dir), None

    async def on_done():
        await worker.stop_when_done()

    source = FileInputTransport(
        iter_pipeline_frames(call), timeline, recorder, on_call_start=observer.start_conversation,
        on_progress=lambda s: None, on_done=on_done,
        call_finished=lambda now: observer.open_turns == 0 and now - observer.last_activity_mono_ns > 1.5e9,
    )
    aggregators = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(),
            user_turn_strategies=UserTurnStrategies(stop=[SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.6)]),
        ),
    )
    stt = WhisperSTTService(
        device="cpu", compute_type="int8", ttfs_p99_latency=1.0,
        settings=WhisperSTTService.Settings(model=str(components.whisper_tiny_en_dir()), language=Language.EN),
    )
    llm = OpenAILLMService(api_key="x", base_url=llm_url, settings=OpenAILLMService.Settings(model="scripted"))
    tts = PiperTTSService(download_dir=components.piper_voice_dir(), settings=PiperTTSService.Settings(voice=components.PIPER_VOICE))
    pipeline = Pipeline([source, stt, aggregators.user(), llm, tts, PacedOutputTransport(timeline, recorder), aggregators.assistant()])
    worker = PipelineWorker(
        pipeline, params=PipelineParams(audio_in_sample_rate=16000, audio_out_sample_rate=16000),
        observers=[observer], enable_rtvi=False, idle_timeout_secs=None,
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()
    vt.close()  # observer.finish(), then flush
    recorder.close()
    return observer


def test_observer_gives_the_same_span_tree_in_another_pipeline(tmp_path):
    global_provider = trace.get_tracer_provider()
    with ScriptedLLMServer(Script([Reply("Sure. I can help with that.", ttft_ms=90, itl_ms=12)])) as server:
        observer = asyncio.run(
            run_other_pipeline(SAMPLES / "address_change.wav", server.base_url, tmp_path / "trace.jsonl", tmp_path)
        )
    assert trace.get_tracer_provider() is global_provider  # library code never sets OTel globals
    spans = read_trace_files([tmp_path / "trace.jsonl"]).spans
    assert observer.turns_completed == 3
    (conversation,) = spans[spans["name"] == sc.SPAN_CONVERSATION].itertuples()
    assert set(spans["service"]) == {"other-agent"}
    turns = spans[spans["name"] == sc.SPAN_TURN]
    assert (turns["parent_span_id"] == conversation.span_id).all() and len(turns) == 3
    for turn in turns.itertuples():
        kids = spans[spans["parent_span_id"] == turn.span_id]
        assert set(sc.STAGE_SPANS) <= set(kids["name"]), sorted(kids["name"])
        by = {k.name: k for k in kids.sort_values("start_ns", ascending=False).itertuples()}  # first of each
        # One llm span per LLM response; when pipecat re-ran the LLM (more of the caller's words came
        # in), the earlier call is marked cancelled and the last one carries the answer.
        calls = kids[kids["name"] == sc.SPAN_LLM].sort_values("start_ns")
        assert calls.iloc[-1].attributes[sc.ATTR_GENAI_OUTPUT_TOKENS] == 6
        for early in calls.iloc[:-1].itertuples():
            assert early.end_ns <= calls.iloc[-1].start_ns and early.status_code == 2
        by["llm"] = calls.iloc[-1]
        # TTFT holds the scripted server's injected 90 ms (frames only: no client instrumentation).
        assert by["llm"].attributes[sc.ATTR_LLM_TTFT_MS] >= 90
        assert by["user.speech"].end_ns <= by["turn.endpointing"].end_ns <= by["llm"].start_ns
        assert by["llm"].start_ns <= by["tts"].start_ns <= by["bot.speech"].start_ns
