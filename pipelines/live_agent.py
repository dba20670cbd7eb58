"""A live voice agent with voicetrace inside: copy this file to trace your own pipecat agent.

The caller talks to it over a real network transport, pipecat's WebSocket server (protobuf frames,
16 kHz mono PCM both ways). The services are voicetrace's reference pipeline (WebRTC or Silero VAD +
smart-turn, Whisper, any OpenAI-compatible LLM, Piper); the voicetrace part is one block
(``open_trace``): the observer writes the call's spans to ``trace.jsonl`` and the LLM service is
instrumented for client-side TTFT. One call per process: the agent serves one caller, and when the
caller hangs up it flushes the trace and exits.

    python pipelines/live_agent.py --out runs/live                  # embedded llama-server
    python pipelines/live_agent.py --llm-url http://HOST:8000/v1 --model NAME
    python pipelines/live_client.py samples/calls/claim_status.wav  # in another terminal
    voicetrace report runs/live/trace.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys
import time
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

from voicetrace import components
from voicetrace.errors import RuntimeFailure, UsageError, UserError
from voicetrace.pipelines.reference import PipelineConfig
from voicetrace.run.folder import RunFolder

SAMPLE_RATE = 16_000
READY = "voicetrace live agent listening on"
"""The line printed (stdout) once the models are warm and the socket accepts a caller."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="A pipecat voice agent on a WebSocket, traced by voicetrace.")
    p.add_argument("--host", default="127.0.0.1", help="Interface to listen on (default: loopback only).")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--out", type=Path, default=None, help="Folder for trace.jsonl and logs (default: runs/live-<time>).")
    p.add_argument("--llm-url", help="OpenAI-compatible server (default: start the embedded llama-server).")
    p.add_argument("--model", help="Model name to request from --llm-url.")
    p.add_argument("--vad", choices=("webrtc", "silero"), default="webrtc")
    p.add_argument("--tools", choices=("intent", "function", "both", "off"), default="intent")
    p.add_argument("--capture-content", action="store_true", help="Record transcripts and LLM text on spans.")
    p.add_argument("--service-name", default="voicetrace-live-agent", help="service.name on the spans.")
    return p.parse_args(argv)


def check_port(host: str, port: int) -> None:
    """Fail before any model loads: pipecat's server task would only log a taken port."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def run_folder(out: Path | None) -> RunFolder:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder = RunFolder(out or Path("runs") / f"live-{stamp}")
    if folder.trace.exists():  # a second call into the same file would pool two calls silently
        raise UsageError(f"{folder.trace} already exists: pick another --out")
    folder.path.mkdir(parents=True, exist_ok=True)
    return folder


def start_llm(args, folder: RunFolder, stack: ExitStack) -> tuple[str, str, bool]:
    """(base URL, model, whether it is the embedded llama-server) — the server stops with ``stack``."""
    if args.llm_url:
        url = args.llm_url.rstrip("/")
        return (url if url.endswith("/v1") else url + "/v1"), args.model, False
    from voicetrace.servers.llama import LlamaServer, LLMServerError

    binary, model = components.llama_server_bin(), components.smollm2_gguf()
    if binary is None or model is None:
        raise RuntimeFailure(f"the embedded llama-server is not installed ({components.INSTALL_HINT}); "
                             "or pass --llm-url URL --model NAME")
    server = LlamaServer(binary=binary, model=model, log_path=folder.llama_log, threads=PipelineConfig.llm_threads)
    try:
        stack.enter_context(server)
    except LLMServerError as exc:
        raise RuntimeFailure(str(exc)) from None
    return f"{server.base_url}/v1", components.SMOLLM2_MODEL_NAME, True


def pipeline_config(args, llm_url: str, llm_model: str) -> PipelineConfig:
    asr, voice = components.whisper_tiny_en_dir(), components.piper_voice_dir()
    if asr is None or voice is None:
        raise RuntimeFailure(f"Whisper tiny.en or the Piper voice is not installed: {components.INSTALL_HINT}")
    return PipelineConfig(llm_base_url=llm_url, llm_model=llm_model, asr_model_path=str(asr),
                          tts_voice_dir=str(voice), vad=args.vad, tools=args.tools)


def websocket_transport(host: str, port: int):
    from pipecat.serializers.protobuf import ProtobufFrameSerializer
    from pipecat.transports.websocket.server import (
        SingleClientWebsocketServerParams,
        SingleClientWebsocketServerTransport,
    )

    params = SingleClientWebsocketServerParams(
        serializer=ProtobufFrameSerializer(),
        audio_in_enabled=True,
        audio_in_sample_rate=SAMPLE_RATE,
        audio_out_enabled=True,
        audio_out_sample_rate=SAMPLE_RATE,
        audio_out_auto_silence=False,  # send speech only; the client plays silence between replies
        audio_out_end_silence_secs=0,
        # Browser Origin check: pipecat reads PIPECAT_ALLOWED_ORIGINS (unset: any origin). Set it
        # before you listen on more than loopback.
    )
    return SingleClientWebsocketServerTransport(params=params, host=host, port=port)


# --- voicetrace: the whole integration (the same CallTrace `voicetrace run` uses) ----------------
def call_trace(folder: RunFolder, args, config: PipelineConfig):
    """Spans of this call into ``folder.trace`` (replaced, never pooled with an earlier call); live
    OTLP export when OTEL_EXPORTER_OTLP_* says so; closing it flushes and undoes the LLM timing."""
    from voicetrace import CallTrace
    from voicetrace import semconv as sc
    from voicetrace.capture.llm_spans import llm_server_attributes

    return CallTrace(
        folder.trace,
        service_name=args.service_name,
        conversation_id=folder.path.name,
        capture_content=True if args.capture_content else None,
        pipeline_config=config.as_dict(),
        conversation_attributes={sc.ATTR_PIPELINE: "live-websocket"},
        stage_attributes={sc.SPAN_ASR: {sc.ATTR_ASR_MODEL: f"whisper-{config.asr_model_name}"},
                          sc.SPAN_LLM: {sc.ATTR_GENAI_REQUEST_MODEL: config.llm_model,
                                        **llm_server_attributes(config.llm_base_url)},
                          sc.SPAN_TTS: {sc.ATTR_TTS_VOICE: config.tts_voice}},
    )
# --- end of the voicetrace block ---


async def serve_one_call(args, config: PipelineConfig, tracing, embedded: bool) -> None:
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    from voicetrace.pipelines.reference import build_processors
    from voicetrace.pipelines.warmup import warm_up

    transport = websocket_transport(args.host, args.port)
    reference = build_processors(config, transport.input(), transport.output(), tool_sink=tracing.observer)
    tracing.instrument_llm(reference.llm, llama_cpp_timings=embedded, stall_timeout_s=30.0)
    worker = PipelineWorker(
        Pipeline(reference.processors),
        params=PipelineParams(audio_in_sample_rate=SAMPLE_RATE, audio_out_sample_rate=SAMPLE_RATE, enable_metrics=True),
        observers=[tracing.observer],
        enable_rtvi=False,
        idle_timeout_secs=None,  # a caller may be quiet; the call ends when they hang up
    )
    started, listening = asyncio.Event(), asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def on_started(_worker, _frame):
        started.set()

    @transport.event_handler("on_websocket_ready")
    async def on_ready(_transport):
        listening.set()

    @transport.event_handler("on_client_connected")
    async def on_connected(_transport, _websocket):
        tracing.observer.start_conversation(time.monotonic_ns())  # call time zero: the caller is on the line

    @transport.event_handler("on_client_disconnected")
    async def on_disconnected(_transport, _websocket):
        await worker.stop_when_done()  # the caller hung up: finish what is queued, then end

    async def announce_when_ready() -> None:
        await started.wait()
        await listening.wait()
        if config.warmup:  # models loaded by now; warm them so the first turn is not a cold start
            await warm_up(reference, config)
        print(f"{READY} ws://{args.host}:{args.port}", flush=True)

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):  # stop cleanly so the trace is flushed
        loop.add_signal_handler(signum, lambda: asyncio.ensure_future(worker.cancel()))
    announcer = asyncio.ensure_future(announce_when_ready())
    runner = WorkerRunner(handle_sigint=False)
    try:
        await runner.add_workers(worker)
        await runner.run()
    finally:
        announcer.cancel()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


def pipecat_logs_to(path: Path) -> None:
    from loguru import logger

    logger.remove()
    logger.add(path, level="DEBUG")
    logger.add(sys.stderr, level="ERROR", format="{level}: {message}")


def _exit_on_sigterm(signum, _frame) -> None:
    raise SystemExit(128 + signum)  # unwinds the ExitStack: the embedded llama-server stops too


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # during the call, serve_one_call's handler cancels the worker
    try:
        if args.llm_url and not args.model:  # every argument checked before anything is created
            raise UsageError("--llm-url needs --model NAME (the model the server serves)")
        check_port(args.host, args.port)
        folder = run_folder(args.out)
        with ExitStack() as stack:
            llm_url, llm_model, embedded = start_llm(args, folder, stack)
            config = pipeline_config(args, llm_url, llm_model)
            pipecat_logs_to(folder.pipeline_log)
            with call_trace(folder, args, config) as tracing:
                asyncio.run(serve_one_call(args, config, tracing, embedded))
            spans = tracing.spans_written
    except UserError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    print(f"call over: {tracing.observer.turns_completed} turns, {spans} spans in {folder.trace}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
