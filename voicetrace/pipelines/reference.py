"""The reference voice pipeline: VAD + smart-turn → faster-whisper → OpenAI-compatible LLM → Piper.

Order (PIPECAT-NOTES): file input → STT → user aggregator (VAD, turn detection) → LLM → TTS →
paced output → assistant aggregator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

PERSONA = (
    "You are Sam, the voice agent of Harbor Mutual Insurance's claims line. You help callers "
    "with claim status, policy questions and address changes. Answer in one or two short "
    "spoken sentences, plain words only: no lists, no markdown, no emojis."
)

VAD_KINDS = ("webrtc", "silero")
ASR_MODES = ("streaming", "segmented")
ASR_MODELS = ("tiny.en", "base")
"""tiny.en is English-only; base is multilingual."""
TOOL_MODES = ("intent", "function", "both", "off")


@dataclass
class PipelineConfig:
    """Everything that shapes the pipeline; written to run.json and onto the spans."""

    llm_base_url: str
    llm_model: str
    asr_model_path: str
    asr_model_name: str = "tiny.en"
    asr_language: str = "en"
    asr_compute_type: str = "int8"
    asr_mode: str = "streaming"
    """``streaming`` (interim results, only the unconfirmed tail at the end) or ``segmented``."""
    asr_window_s: float | None = None
    """Streaming ASR's final pass: encoder window of at least this many seconds, just covering the
    tail (None: Whisper's standard 30 s window). Opt-in: a fast final transcript lets smart-turn's
    early "complete" at a comma pause commit a one-word turn. See BENCHMARKS.md."""
    asr_threads: int = 2
    """CTranslate2 threads for Whisper (0 = its default, which oversubscribes 2 cores)."""
    tts_voice_dir: str = ""
    tts_voice: str = "en_US-joe-medium"
    vad: str = "webrtc"
    vad_mode: int = 2
    vad_start_secs: float = 0.2
    vad_stop_secs: float = 0.2
    turn_model: str = "smart-turn-v3"
    turn_stop_secs: float = 1.0
    """Smart-turn's silence fallback when it judges the caller unfinished (pipecat's default: 3.0;
    1.0 measured better, see BENCHMARKS.md)."""
    llm_max_tokens: int = 40
    llm_temperature: float = 0.0
    llm_seed: int = 7
    system_prompt: str = PERSONA
    tools: str = "intent"
    """How tools run in turns: ``intent`` (rules on the transcript), ``function`` (the model
    calls them), ``both`` or ``off``. lookup_policy always runs at call start unless ``off``."""
    tools_db: str = ""
    caller_phone: str = "+15550100"
    warmup: bool = True
    """Warm LLM (prompt cache), ASR, TTS and turn model before call time zero."""
    llm_threads: int = 2
    """llama-server threads (embedded default)."""
    tts_first_clause: bool = True
    """Hand TTS the reply's first clause (at , ; :) instead of its whole first sentence."""

    def as_dict(self) -> dict:
        return asdict(self)


def build_vad(config: PipelineConfig):
    from pipecat.audio.vad.vad_analyzer import VADParams

    params = VADParams(start_secs=config.vad_start_secs, stop_secs=config.vad_stop_secs)
    if config.vad == "silero":
        from pipecat.audio.vad.silero import SileroVADAnalyzer

        from voicetrace.pipelines.vad_position import AudioPositionMixin

        class PositionedSileroVADAnalyzer(AudioPositionMixin, SileroVADAnalyzer):
            pass

        return PositionedSileroVADAnalyzer(params=params)
    from voicetrace.pipelines.webrtc_vad import WebRTCVADAnalyzer

    return WebRTCVADAnalyzer(mode=config.vad_mode, params=params)


@dataclass
class ReferencePipeline:
    processors: list
    """In order, ready for ``Pipeline([...])``."""
    llm: object
    stt: object
    tts: object
    context: object
    turn_analyzer: object
    vad: object



def build_processors(config: PipelineConfig, input_transport, output_transport, tool_sink=None) -> ReferencePipeline:
    """The reference pipeline's processors and the services instrumentation hooks into.

    ``tool_sink`` (the VoiceTraceObserver) receives a span per tool execution."""
    from pipecat.audio.turn.smart_turn.base_smart_turn import SmartTurnParams
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.services.openai.llm import OpenAILLMService
    from pipecat.services.piper.tts import PiperTTSService
    from pipecat.services.whisper.stt import WhisperSTTService
    from pipecat.transcriptions.language import Language
    from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import (
        TurnAnalyzerUserTurnStopStrategy,
    )
    from pipecat.turns.user_turn_strategies import UserTurnStrategies

    from voicetrace.pipelines.clause_aggregator import FirstClauseAggregator
    from voicetrace.pipelines.streaming_whisper import StreamingWhisperSTTService
    from voicetrace.tools.claims_db import ensure_db
    from voicetrace.tools.insurance import InsuranceTools
    from voicetrace.tools.runner import IntentToolRunner, register_function_tools, tools_schema

    if config.asr_mode == "streaming":
        stt = StreamingWhisperSTTService(
            model_path=config.asr_model_path, language=config.asr_language, compute_type=config.asr_compute_type,
            cpu_threads=config.asr_threads, short_window_s=config.asr_window_s, ttfs_p99_latency=1.0,
        )
    else:
        stt = WhisperSTTService(
            device="cpu",
            compute_type=config.asr_compute_type,
            settings=WhisperSTTService.Settings(model=config.asr_model_path, language=Language(config.asr_language)),
            ttfs_p99_latency=1.0,
        )
    turn_analyzer = LocalSmartTurnAnalyzerV3(cpu_count=1, params=SmartTurnParams(stop_secs=config.turn_stop_secs))
    vad = build_vad(config)
    function_tools = config.tools in ("function", "both")
    context = LLMContext(tools=tools_schema()) if function_tools else LLMContext()
    aggregators = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=vad,
            user_turn_strategies=UserTurnStrategies(
                stop=[TurnAnalyzerUserTurnStopStrategy(turn_analyzer=turn_analyzer)]
            ),
        ),
    )
    llm = OpenAILLMService(
        api_key="not-needed",
        base_url=config.llm_base_url,
        settings=OpenAILLMService.Settings(
            model=config.llm_model,
            system_instruction=config.system_prompt,
            max_tokens=config.llm_max_tokens,
            temperature=config.llm_temperature,
            seed=config.llm_seed,
        ),
    )
    tts = PiperTTSService(
        download_dir=Path(config.tts_voice_dir),
        settings=PiperTTSService.Settings(voice=config.tts_voice),
    )
    if config.tts_first_clause:
        # pipecat 1.14 takes no aggregator argument; its sentence aggregator is replaced in place.
        tts._text_aggregator = FirstClauseAggregator(language=tts._text_aggregator.language)
    processors = [input_transport, stt, aggregators.user()]
    if config.tools != "off":
        tools = InsuranceTools(ensure_db(Path(config.tools_db) if config.tools_db else None), config.caller_phone)
        processors.append(IntentToolRunner(tools, context, tool_sink, intents=config.tools in ("intent", "both")))
        if function_tools:
            register_function_tools(llm, tools, {"sink": tool_sink})
    processors += [llm, tts, output_transport, aggregators.assistant()]
    return ReferencePipeline(processors=processors, llm=llm, stt=stt, tts=tts, context=context,
                             turn_analyzer=turn_analyzer, vad=vad)
