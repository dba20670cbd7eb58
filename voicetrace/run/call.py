"""``run_call``: check everything, then create the run folder, start the LLM, replay, record the outcome.

Order matters: usage (exit 2), then the recording (exit 3), then the installed models and the LLM
server (exit 4) are checked before the run folder exists; after that every way the run ends —
complete, failed, interrupted — leaves the trace so far and a run.json that says which.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from contextlib import ExitStack
from pathlib import Path

from voicetrace import components
from voicetrace.audio.checks import check_call
from voicetrace.audio.recorder import CallRecorder
from voicetrace.audio.source import open_call
from voicetrace.errors import UsageError
from voicetrace.pipelines.reference import PipelineConfig
from voicetrace.run import metadata
from voicetrace.run.backend import LLMBackend, embedded_backend, embedded_files, external_backend
from voicetrace.run.folder import RunFolder
from voicetrace.run.lifecycle import pipecat_logs_to
from voicetrace.run.options import ProgressFn, RunError, RunInterrupted, RunOptions, RunResult
from voicetrace.run.replay import replay_call
from voicetrace.run.telemetry import close_capture, start_capture


def _model_dirs(asr_model: str) -> tuple[Path, Path]:
    asr, voice = components.asr_model_dir(asr_model), components.piper_voice_dir()
    missing = [name for name, p in ((f"Whisper {asr_model}", asr), ("Piper voice", voice)) if p is None]
    if missing:
        raise RunError(f"{', '.join(missing)} not installed: {components.INSTALL_HINT}")
    return asr, voice


def _create_folder(options: RunOptions, call_path: Path) -> tuple[str, RunFolder]:
    run_id = options.run_id or metadata.new_run_id(call_path)
    folder = RunFolder(Path(options.out_dir) / run_id)
    try:
        folder.path.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise UsageError(f"run folder already exists: {folder.path}") from None
    return run_id, folder


def run_call(options: RunOptions, progress: ProgressFn | None = None) -> RunResult:
    """Replay ``options.call_path`` in real time into a new run folder; UserError subclasses for what
    the user can fix, RunInterrupted on SIGINT/SIGTERM (the folder keeps what was recorded)."""
    options.validate()
    call = open_call(options.call_path, options.caller_channel)
    call_notes = check_call(call)  # corrupt data fails here, before any server starts
    for note in call_notes:
        if options.on_warning:
            options.on_warning(note)
    settings = options.pipeline_settings()
    asr_dir, voice_dir = _model_dirs(settings["asr_model_name"])
    external = (external_backend(options.llm_url, options.llm_model, options.llm_stall_timeout_s)
                if options.llm_url else None)
    llama_files = embedded_files() if external is None else None
    run_id, folder = _create_folder(options, call.path)
    started = time.monotonic()

    with ExitStack() as stack:
        backend = external if external is not None else stack.enter_context(embedded_backend(
            llama_files, folder.llama_log, settings.get("llm_threads", PipelineConfig.llm_threads),
            options.llm_stall_timeout_s))
        config = PipelineConfig(llm_base_url=backend.base_url, llm_model=backend.model, asr_model_path=str(asr_dir),
                                tts_voice_dir=str(voice_dir))
        config = dataclasses.replace(config, **settings)
        info = metadata.started_info(run_id, call, call_notes, config.as_dict(), backend.describe(),
                                     bool(options.capture_content), options.redact)
        folder.write_info(info)
        result = RunResult(run_id, folder.path, call, 0, 0, 0.0)
        try:
            _replay(folder, call, config, backend, options, result, progress)
        except (KeyboardInterrupt, RunInterrupted):
            result.interrupted = True
            info["status"] = "interrupted"
            raise
        except Exception as exc:  # the trace so far is kept; run.json says why the run stopped
            info["status"] = "failed"
            info["error"] = str(exc) or type(exc).__name__
            raise
        finally:
            result.wall_seconds = time.monotonic() - started
            folder.write_info(metadata.finished_info(info, result, options.otlp))
    return result


def _replay(folder: RunFolder, call, config: PipelineConfig, backend: LLMBackend, options: RunOptions,
            result: RunResult, progress: ProgressFn | None) -> None:
    recorder = CallRecorder(folder)
    capture = start_capture(folder, options, config, result.run_id, call) if options.capture else None
    try:
        with pipecat_logs_to(folder.pipeline_log):
            asyncio.run(replay_call(folder, call, config, backend, capture, recorder,
                                    progress, options.tail_s, result.warmup_ms))
    finally:
        try:
            if capture is not None:
                close_capture(capture, result)
        finally:
            recorder.close()
