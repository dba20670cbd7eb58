"""`voicetrace run`: replay one call through the reference pipeline and write the run folder.

runs/<run-id>/ holds trace.jsonl (spans, written as the call goes), bot.wav, call.wav
(caller left, bot right) and run.json (configuration and outcome).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import platform
import secrets
import signal
import sys
import time
import warnings
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from voicetrace import __version__, components
from voicetrace.audio.recorder import CallRecorder
from voicetrace.audio.source import CallAudio, iter_pipeline_frames, open_call
from voicetrace.clock import RunClock
from voicetrace.pipelines.reference import PipelineConfig

_TAIL_IDLE_NS = 1_500_000_000
_EMBEDDED_SERVER: "ContextVar[LlamaServer | None]" = ContextVar("voicetrace_embedded_server", default=None)
EMBEDDED_LLM = "llama-server (embedded)"


class RunError(Exception):
    """A run that could not start or complete; one line for the user."""


class RunInterrupted(Exception):
    """The run was stopped by SIGINT or SIGTERM; what was recorded so far is kept."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class RunOptions:
    call_path: Path
    out_dir: Path = Path("runs")
    llm_url: str | None = None
    llm_model: str | None = None
    caller_channel: int = 0
    capture_content: bool | None = None
    """None: follow OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT."""
    redact: bool = False
    vad: str = "webrtc"
    tools: str = "intent"
    tools_db: Path | None = None
    asr_mode: str = "streaming"
    asr_model: str = "tiny.en"
    language: str = "en"
    overrides: dict = field(default_factory=dict)
    """PipelineConfig fields to change (tuning and benchmarks), e.g. {"turn_stop_secs": 1.0}."""
    capture: bool = True
    """False: no voicetrace observer or LLM instrumentation at all (the overhead benchmark's baseline)."""
    tail_s: float | None = None
    """Silence fed after the recording; None: until the last reply has played (needs capture)."""
    service_name: str = "voicetrace"
    run_id: str | None = None
    otlp: "OtlpTarget | None" = None
    """Also send spans live to this OTLP backend (voicetrace.export)."""
    environment: str | None = None
    """deployment.environment; None: OTEL_RESOURCE_ATTRIBUTES or ``local``."""
    on_warning: Callable[[str], None] | None = None
    """Called (at most once per problem) when live export runs into trouble."""
    llm_stall_timeout_s: float = 30.0
    """An LLM server silent this long (before its answer or mid-stream) ends the turn's LLM call."""


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    call: CallAudio
    turns: int
    spans_written: int
    wall_seconds: float
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    warmup_ms: dict = field(default_factory=dict)
    """Milliseconds each model took to warm up before call time zero."""
    otlp: "ExportStats | None" = None

    @property
    def trace_path(self) -> Path:
        return self.run_dir / "trace.jsonl"


ProgressFn = Callable[[float, float, int], None]
"""(call seconds played, call seconds total, turns completed)."""


def normalise_llm_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def _new_run_id(call: Path) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{call.stem}-{secrets.token_hex(2)}"


def _host_info() -> dict:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
    }


def _versions() -> dict:
    import importlib.metadata as md

    out = {"voicetrace": __version__}
    for dist in ("pipecat-ai", "faster-whisper", "piper-tts", "opentelemetry-sdk", "webrtcvad-wheels", "onnxruntime"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out


def _embedded_config_paths(asr_model: str) -> tuple[Path, Path]:
    asr = components.asr_model_dir(asr_model)
    voice = components.piper_voice_dir()
    missing = [name for name, p in ((f"Whisper {asr_model}", asr), ("Piper voice", voice)) if p is None]
    if missing:
        raise RunError(f"{', '.join(missing)} not installed: {components.INSTALL_HINT}")
    return asr, voice


def _check_llm_reachable(base_url: str) -> None:
    import httpx

    try:
        httpx.get(f"{base_url}/models", timeout=5.0)
    except httpx.HTTPError as exc:
        raise RunError(f"LLM server at {base_url} is not reachable: {type(exc).__name__}") from None


def run_call(options: RunOptions, progress: ProgressFn | None = None) -> RunResult:
    from voicetrace.audio.checks import check_call

    call = open_call(options.call_path, options.caller_channel)
    call_notes = check_call(call)  # corrupt data fails here, before any server starts
    for note in call_notes:
        if options.on_warning:
            options.on_warning(note)
    if options.asr_model == "tiny.en" and options.language != "en":
        raise RunError(f"Whisper tiny.en is English-only: use --asr-model base for --language {options.language}")
    asr_dir, voice_dir = _embedded_config_paths(options.asr_model)
    run_id = options.run_id or _new_run_id(call.path)
    run_dir = Path(options.out_dir) / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    started = time.monotonic()

    with ExitStack() as stack:
        if options.llm_url:
            if not options.llm_model:
                raise RunError("--llm-url needs --model NAME (the model the server serves)")
            base_url = normalise_llm_url(options.llm_url)
            _check_llm_reachable(base_url)
            llm_model, llm_server = options.llm_model, "external"
        else:
            threads = options.overrides.get("llm_threads", PipelineConfig.llm_threads)
            base_url, llm_model = _start_embedded_llm(stack, run_dir, threads)
            llm_server = EMBEDDED_LLM
        config = PipelineConfig(
            llm_base_url=base_url,
            llm_model=llm_model,
            asr_model_path=str(asr_dir),
            asr_model_name=options.asr_model,
            asr_mode=options.asr_mode,
            asr_language=options.language,
            tts_voice_dir=str(voice_dir),
            vad=options.vad,
            tools=options.tools,
            tools_db=str(options.tools_db or ""),
            extra={"llm_server": llm_server, "llm_stall_timeout_s": options.llm_stall_timeout_s},
        )
        try:
            config = dataclasses.replace(config, **options.overrides)
        except TypeError as exc:
            raise RunError(f"unknown pipeline setting: {exc}") from None
        run_info = {
            "run_id": run_id,
            "started_at": datetime.now(timezone.utc).isoformat(),
            "call": {
                "file": str(call.path),
                "sample_rate": call.sample_rate,
                "channels": call.channels,
                "caller_channel": call.caller_channel,
                "duration_ms": call.duration_ms,
                "format": f"{call.format}/{call.subtype}",
                "notes": call_notes,
            },
            "pipeline": config.as_dict(),
            "capture_content": bool(options.capture_content),
            "redact": options.redact,
            "versions": _versions(),
            "host": _host_info(),
            "status": "running",
        }
        _write_json(run_dir / "run.json", run_info)
        result = RunResult(run_id, run_dir, call, 0, 0, 0.0)
        try:
            _replay(call, config, options, run_dir, result, progress)
        except (KeyboardInterrupt, RunInterrupted):
            result.interrupted = True
            run_info["status"] = "interrupted"
            raise
        except Exception as exc:  # the trace so far is kept; run.json says why the run stopped
            run_info["status"] = "failed"
            run_info["error"] = str(exc) or type(exc).__name__
            raise
        finally:
            result.wall_seconds = time.monotonic() - started
            if run_info["status"] == "running":
                run_info["status"] = "complete"
            run_info.update(
                finished_at=datetime.now(timezone.utc).isoformat(),
                turns=result.turns,
                spans_written=result.spans_written,
                warmup_ms=result.warmup_ms,
                wall_seconds=round(result.wall_seconds, 3),
            )
            if options.otlp is not None and result.otlp is not None:
                run_info["otlp"] = {"endpoint": options.otlp.endpoint, "protocol": options.otlp.protocol,
                                    "spans_sent": result.otlp.spans_sent,
                                    "spans_undelivered": result.otlp.spans_undelivered}
            _write_json(run_dir / "run.json", run_info)
    return result


def _start_embedded_llm(stack: ExitStack, run_dir: Path, threads: int) -> tuple[str, str]:
    from voicetrace.servers.llama import LlamaServer, LLMServerError

    binary, model = components.llama_server_bin(), components.smollm2_gguf()
    if binary is None or model is None:
        what = "llama-server" if binary is None else "the SmolLM2 GGUF"
        raise RunError(f"{what} is not installed: {components.INSTALL_HINT}, or pass --llm-url URL --model NAME")
    server = LlamaServer(binary=binary, model=model, log_path=run_dir / "llama-server.log", threads=threads)
    try:
        stack.enter_context(server)
    except LLMServerError as exc:
        raise RunError(str(exc)) from None
    stack.callback(_EMBEDDED_SERVER.reset, _EMBEDDED_SERVER.set(server))  # watched during the call (_watch_embedded)
    return f"{server.base_url}/v1", components.SMOLLM2_MODEL_NAME


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


def _replay(
    call: CallAudio,
    config: PipelineConfig,
    options: RunOptions,
    run_dir: Path,
    result: RunResult,
    progress: ProgressFn | None,
) -> None:
    from voicetrace import semconv as sc
    from voicetrace.capture.observer import VoiceTraceObserver
    from voicetrace.export import attach_live_export, environment_from, run_resource_attributes
    from voicetrace.tracing import make_tracer_provider

    recorder = CallRecorder(run_dir)
    if not options.capture:  # the overhead baseline: the same replay with no voicetrace capture at all
        try:
            with _pipecat_logs_to(run_dir / "pipeline.log"):
                asyncio.run(_run_pipeline(call, config, None, recorder, progress, options.tail_s, result.warmup_ms))
        finally:
            recorder.close()
        return
    clock = RunClock()
    provider, exporter = make_tracer_provider(
        run_dir / "trace.jsonl",
        service_name=options.service_name,
        resource_attributes={
            "voice.run.id": result.run_id,
            **run_resource_attributes(config.as_dict(), result.run_id, call.path.name,
                                      environment_from(os.environ, options.environment)),
        },
    )
    live = attach_live_export(provider, options.otlp, warn=options.on_warning) if options.otlp else None
    observer = VoiceTraceObserver(
        tracer_provider=provider,
        clock=clock,
        capture_content=options.capture_content,
        redact=options.redact,
        conversation_id=result.run_id,
        conversation_attributes={
            sc.ATTR_CALL_FILE: call.path.name,
            sc.ATTR_CALL_DURATION_MS: call.duration_ms,
            sc.ATTR_PIPELINE: "reference",
        },
        stage_attributes={
            sc.SPAN_ASR: {sc.ATTR_ASR_MODEL: f"whisper-{config.asr_model_name}"},
            sc.SPAN_LLM: {
                sc.ATTR_GENAI_REQUEST_MODEL: config.llm_model,
                sc.ATTR_GENAI_SYSTEM: "openai-compatible",
                sc.ATTR_GENAI_SERVER_ADDRESS: config.llm_base_url,
            },
            sc.SPAN_TTS: {sc.ATTR_TTS_VOICE: config.tts_voice},
        },
    )
    try:
        with _pipecat_logs_to(run_dir / "pipeline.log"):
            asyncio.run(_run_pipeline(call, config, observer, recorder, progress, options.tail_s, result.warmup_ms))
    finally:
        observer.finish()
        provider.shutdown()
        recorder.close()
        result.turns = observer.turns_completed
        result.spans_written = exporter.spans_written
        result.otlp = live.stats if live else None


async def _run_pipeline(call, config, observer, recorder, progress: ProgressFn | None,
                        tail_s: float | None = None, warmup_ms: dict | None = None) -> None:
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    from voicetrace.capture.llm_stream import instrument_openai_llm
    from voicetrace.pipelines.file_transport import CallTimeline, FileInputTransport, PacedOutputTransport
    from voicetrace.pipelines.reference import build_processors
    from voicetrace.pipelines.warmup import warm_up

    total_s = call.duration_ms / 1000
    timeline = CallTimeline()
    worker: PipelineWorker | None = None
    file_done = asyncio.Event()

    tail_end_ns: list[int] = []

    def call_finished(now_ns: int) -> bool:
        if tail_s is not None or observer is None:  # a fixed tail (benchmarks; no capture to ask)
            if not tail_end_ns:
                tail_end_ns.append(now_ns + int((tail_s if tail_s is not None else 10.0) * 1e9))
            return now_ns >= tail_end_ns[0]
        # The last reply has played out and the line has been quiet for a moment.
        return observer.open_turns == 0 and now_ns - observer.last_activity_mono_ns > _TAIL_IDLE_NS

    async def before_feed() -> None:
        if config.warmup:
            warmup_ms.update(await warm_up(reference, config))

    async def on_done() -> None:
        file_done.set()
        if worker is not None:
            await worker.stop_when_done()

    def on_progress(played_s: float) -> None:
        if progress:
            progress(played_s, total_s, observer.turns_completed if observer else 0)

    input_transport = FileInputTransport(
        iter_pipeline_frames(call),
        timeline,
        recorder,
        on_call_start=observer.start_conversation if observer else (lambda start_ns: None),
        on_progress=on_progress,
        call_finished=call_finished,
        on_done=on_done,
        before_feed=before_feed,
    )
    output_transport = PacedOutputTransport(timeline, recorder)
    reference = build_processors(config, input_transport, output_transport, tool_sink=observer)
    if observer is not None and hasattr(reference.vad, "pop_position_s"):
        observer.use_vad_positions(reference.vad)
    if observer is not None:
        instrument_openai_llm(reference.llm, observer, llama_cpp_timings=config.extra.get("llm_server") == EMBEDDED_LLM,
                              stall_timeout_s=config.extra.get("llm_stall_timeout_s"))
    worker = PipelineWorker(
        Pipeline(reference.processors),
        params=PipelineParams(audio_in_sample_rate=16_000, audio_out_sample_rate=16_000, enable_metrics=True),
        observers=[observer] if observer is not None else [],
        enable_rtvi=False,
        idle_timeout_secs=None,
    )
    # Ctrl-C / SIGTERM: cancel the pipeline ourselves (pipecat would swallow the cancellation),
    # then report the signal so the run exits 130 / 143 with everything recorded so far.
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if not received:
            received.append(signum)
            asyncio.ensure_future(worker.cancel(reason=f"signal {signum}"))

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    # The embedded llama-server dying mid-call: every later turn would fail, so the run stops
    # (spans so far are kept) and says so.
    died: list[str] = []
    embedded = _EMBEDDED_SERVER.get()
    watchdog = asyncio.ensure_future(_watch_embedded(embedded, worker, died)) if embedded is not None else None
    runner = WorkerRunner(handle_sigint=False)
    try:
        await runner.add_workers(worker)
        await runner.run()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        if watchdog is not None:
            watchdog.cancel()
    if received:
        raise RunInterrupted(received[0])
    if died:
        raise RunError(died[0])
    if input_transport.error is not None:
        raise input_transport.error


async def _watch_embedded(server, worker, died: list[str]) -> None:
    """Poll the embedded server's process; when it exits, say why and cancel the pipeline."""
    while server.process is not None:
        code = server.process.poll()
        if code is not None:
            how = (f"killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals()
                   else f"exit code {code}")
            died.append(f"llama-server exited mid-call ({how}); spans so far are in "
                        f"{server.log_path.parent / 'trace.jsonl'}; see {server.log_path}")
            await worker.cancel(reason="llama-server exited")
            return
        await asyncio.sleep(0.25)  # polling the child process's state


@contextmanager
def _pipecat_logs_to(path: Path):
    """pipecat logs (loguru) go to the run folder; only errors reach the terminal."""
    from loguru import logger

    logger.remove()
    # pipecat's own deprecation notices are for pipecat's users, not for voicetrace's.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"pipecat\..*")
    file_sink = logger.add(path, level="DEBUG", enqueue=False)
    err_sink = logger.add(sys.stderr, level="ERROR", format="{level}: {message}")
    try:
        yield
    finally:
        logger.remove(file_sink)
        logger.remove(err_sink)
