"""Record pipecat's OWN tracing of a real call: the fixture tests/data/pipecat_trace.jsonl.

A pipecat user who never installed voicetrace's observer still has pipecat's built-in spans
(``conversation → turn → stt / llm / tts``). This script makes exactly those: it replays a sample
call in real time through the reference pipeline's pieces (WebRTC VAD + smart-turn, faster-whisper
tiny.en segmented — pipecat's own ``WhisperSTTService`` — the embedded llama-server with SmolLM2,
Piper), with pipecat's tracing switched on the documented way (``setup_tracing(...)``, then
``PipelineWorker(..., enable_tracing=True, enable_turn_tracking=True, conversation_id=...)``), and
writes the spans as OTLP JSON lines (what the OpenTelemetry Collector's file exporter writes).
voicetrace's observer is NOT in the pipeline: every span in the output is pipecat's.

Rerun (real time, about a minute; on a shared machine take the heavy lock):

    flock /tmp/voicetrace-heavy.lock .venv/bin/python pipelines/make_pipecat_trace.py
    .venv/bin/voicetrace report tests/data/pipecat_trace.jsonl --json > tests/data/golden/pipecat_trace.jsonl.report.json
    COLUMNS=140 .venv/bin/voicetrace report tests/data/pipecat_trace.jsonl > tests/data/golden/pipecat_trace.jsonl.report.txt 2>&1

Needs what ``make install`` provides (models, ~/.cache/voicetrace's llama-server and GGUF).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CALL = ROOT / "samples" / "calls" / "claim_status.wav"
DEFAULT_OUT = ROOT / "tests" / "data" / "pipecat_trace.jsonl"
TAIL_S = 8.0
"""Silence fed after the call's audio, so the last reply is heard out before the pipeline stops."""


async def replay(call_path: Path, llm_base_url: str, llm_model: str, conversation_id: str, work: Path) -> None:
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    from voicetrace import components
    from voicetrace.audio.recorder import CallRecorder
    from voicetrace.audio.source import iter_pipeline_frames, open_call
    from voicetrace.pipelines.file_transport import CallTimeline, FileInputTransport, PacedOutputTransport
    from voicetrace.pipelines.reference import PipelineConfig, build_processors
    from voicetrace.pipelines.warmup import warm_up

    config = PipelineConfig(llm_base_url=llm_base_url, llm_model=llm_model,
                            asr_model_path=str(components.whisper_tiny_en_dir()), asr_mode="segmented",
                            tts_voice_dir=str(components.piper_voice_dir()), tools="off")
    call = open_call(call_path)
    timeline = CallTimeline()
    recorder = CallRecorder(work)
    worker: PipelineWorker | None = None
    tail_end_ns: list[int] = []

    def call_finished(now_ns: int) -> bool:
        if not tail_end_ns:
            tail_end_ns.append(now_ns + int(TAIL_S * 1e9))
        return now_ns >= tail_end_ns[0]

    async def before_feed() -> None:
        await warm_up(reference, config)  # before call time zero, as `voicetrace run` does

    async def on_done() -> None:
        if worker is not None:
            await worker.stop_when_done()

    input_transport = FileInputTransport(iter_pipeline_frames(call), timeline, recorder,
                                         on_call_start=lambda start_ns: None, on_progress=lambda played_s: None,
                                         call_finished=call_finished, on_done=on_done, before_feed=before_feed)
    reference = build_processors(config, input_transport, PacedOutputTransport(timeline, recorder))
    worker = PipelineWorker(
        Pipeline(reference.processors),
        params=PipelineParams(audio_in_sample_rate=16_000, audio_out_sample_rate=16_000, enable_metrics=True),
        enable_rtvi=False, idle_timeout_secs=None,
        enable_tracing=True, enable_turn_tracking=True, conversation_id=conversation_id,
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await runner.run()
    recorder.close()
    if input_transport.error is not None:
        raise input_transport.error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--call", type=Path, default=DEFAULT_CALL)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--conversation-id", default="pipecat-claim-status")
    args = parser.parse_args(argv)

    from loguru import logger
    from opentelemetry import trace
    from pipecat.utils.tracing.setup import setup_tracing

    from voicetrace import components
    from voicetrace.servers.llama import LlamaServer
    from voicetrace.otel.jsonl import OtlpJsonLinesExporter

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    # pipecat's resource names the host (HOSTNAME) and an environment; keep this machine out of a fixture.
    os.environ["HOSTNAME"] = "fixture"
    os.environ["ENVIRONMENT"] = "fixture"
    args.out.unlink(missing_ok=True)  # the exporter appends: one call per fixture
    setup_tracing(service_name="pipecat-agent", exporter=OtlpJsonLinesExporter(args.out))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with LlamaServer(binary=components.llama_server_bin(), model=components.smollm2_gguf(),
                         log_path=work / "llama-server.log", threads=2) as server:
            asyncio.run(replay(args.call, f"{server.base_url}/v1", components.SMOLLM2_MODEL_NAME,
                               args.conversation_id, work))
    trace.get_tracer_provider().shutdown()  # flushes the batch processor setup_tracing installed
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
