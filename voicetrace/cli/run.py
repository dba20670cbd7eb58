"""``voicetrace run``: replay a call through the reference pipeline, with a progress line, then the
same report ``voicetrace report RUN_FOLDER`` prints."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import List, Optional

import typer

from voicetrace.cli.app import app, console, err_console, print_warning


@app.command()
def run(
    call: Path = typer.Argument(..., help="The recorded call to replay (WAV; FLAC/OGG also read)."),
    out: Path = typer.Option(Path("runs"), "--out", help="Folder that receives runs/<run-id>/."),
    llm_url: Optional[str] = typer.Option(None, "--llm-url", help="OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama); starts nothing."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name to request from --llm-url."),
    caller_channel: int = typer.Option(0, "--caller-channel", help="Channel that holds the caller in a multi-channel file."),
    vad: str = typer.Option("webrtc", "--vad", help="Voice activity detector: webrtc or silero."),
    asr: str = typer.Option("streaming", "--asr", help="streaming (interim transcripts, only the unconfirmed tail after the caller stops) or segmented (one Whisper pass per VAD segment)."),
    asr_model: Optional[str] = typer.Option(None, "--asr-model", help="tiny.en (English, default) or base (multilingual; default when --language is not en)."),
    language: str = typer.Option("en", "--language", help="Language the caller speaks (Whisper code: en, hi, es, ...)."),
    tools_db: Optional[Path] = typer.Option(None, "--tools-db", help="SQLite database of policies and claims the tools use (default: ~/.cache/voicetrace/claims.sqlite, created on first run)."),
    settings: Optional[List[str]] = typer.Option(None, "--set", help="Tune a pipeline setting, KEY=VALUE (repeatable): e.g. turn_stop_secs=1.0, vad_stop_secs=0.2, tts_first_clause=true, llm_threads=2, asr_window_s=8, warmup=false. run.json lists them all."),
    tools: str = typer.Option("intent", "--tools", help="How the agent's tools run in turns: intent (rules on the transcript; the embedded SmolLM2 cannot call tools), function (the model calls them), both, off."),
    capture_content: bool = typer.Option(False, "--capture-content", help="Record transcripts, LLM text and tool arguments on spans (off by default: calls carry personal data; OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true also turns it on)."),
    redact: bool = typer.Option(False, "--redact", help="With content capture, mask digit runs and e-mail addresses in every text attribute."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Name of the run folder (default: time, call name, random suffix)."),
    otlp: Optional[str] = typer.Option(None, "--otlp", help="Also send spans live to an OTLP backend such as Jaeger: http://HOST:4317 (gRPC) or http://HOST:4318 (HTTP); OTEL_EXPORTER_OTLP_ENDPOINT/_PROTOCOL/_HEADERS work too."),
    otlp_protocol: Optional[str] = typer.Option(None, "--otlp-protocol", help="grpc or http/protobuf (default: from the URL, then OTEL_EXPORTER_OTLP_PROTOCOL, then http/protobuf)."),
    service_name: str = typer.Option("voicetrace", "--service-name", envvar="OTEL_SERVICE_NAME", help="service.name on the spans (what Jaeger lists them under)."),
    environment: Optional[str] = typer.Option(None, "--environment", help="deployment.environment on the spans (default: from OTEL_RESOURCE_ATTRIBUTES, else local)."),
    prometheus_port: Optional[int] = typer.Option(None, "--prometheus-port", help="Serve the call's latency metrics for Prometheus at http://127.0.0.1:PORT/metrics while it runs (OTEL_EXPORTER_PROMETHEUS_HOST for another address; docs/METRICS.md)."),
    prometheus_linger_s: float = typer.Option(0.0, "--prometheus-linger-s", help="After the call, keep the metrics endpoint up until Prometheus has scraped it once more, at most this many seconds (a replay's last numbers)."),
    llm_timeout_s: float = typer.Option(30.0, "--llm-timeout-s", help="An LLM server that sends nothing for this long (before answering or mid-stream) ends that turn's LLM call with an error span; the run goes on."),
) -> None:
    """Replay CALL in real time through the reference pipeline; one span per stage of each turn."""
    from voicetrace.cli.report import print_run_report
    from voicetrace.otel.live import export_summary, quiet_exporter_logs
    from voicetrace.otel.meters import resolve_metrics_export
    from voicetrace.otel.target import resolve_otlp_target
    from voicetrace.run import RunInterrupted, RunOptions, run_call
    from voicetrace.run.options import parse_settings

    try:
        options = RunOptions(
            call_path=call, out_dir=out, llm_url=llm_url, llm_model=model, caller_channel=caller_channel,
            capture_content=True if capture_content else None, redact=redact, vad=vad, tools=tools,
            tools_db=tools_db, run_id=run_id, asr_mode=asr, asr_model=asr_model, language=language,
            overrides=parse_settings(settings or []), service_name=service_name, environment=environment,
            llm_stall_timeout_s=llm_timeout_s, on_warning=print_warning,
            prometheus_port=prometheus_port, prometheus_linger_s=prometheus_linger_s,
        )
        options.otlp = resolve_otlp_target(otlp, otlp_protocol, os.environ)
        resolve_metrics_export(options.otlp, prometheus_port, os.environ)  # a bad OTEL_METRICS_* before anything starts
        options.validate()  # every usage mistake before the progress line (run_call checks again)
        quiet_exporter_logs()
        with _RunProgress() as progress:
            result = run_call(options, progress.update)
    except (KeyboardInterrupt, RunInterrupted) as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        err_console.print(f"interrupted ({signal.Signals(signum).name}): spans recorded so far are in the run folder")
        raise typer.Exit(128 + signum)
    folder = result.folder
    console.print(f"run {result.run_id}: {result.turns} turns, {result.spans_written} spans in {result.wall_seconds:.1f} s")
    console.print(f"  {folder.path}/  " + "  ".join(p.name for p in (folder.trace, folder.bot_audio,
                                                                    folder.call_recording, folder.info_path)))
    if result.otlp is not None:
        line, complete = export_summary(options.otlp, result.otlp)
        (console if complete else err_console).print(line, highlight=False, soft_wrap=True)
    for warning in result.warnings:
        print_warning(warning)
    print_run_report(folder.path, console, err_console)


class _RunProgress:
    """A live line: call time played / total, turns so far."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn

        self._progress = Progress(
            TextColumn("[bold]replaying[/]"),
            BarColumn(),
            TextColumn("{task.fields[played]:.1f}/{task.total:.1f} s  turns: {task.fields[turns]}"),
            console=err_console,
            transient=False,
        )
        self._task = None

    def __enter__(self):
        self._progress.__enter__()
        return self

    def __exit__(self, *exc):
        self._progress.__exit__(*exc)

    def update(self, played_s: float, total_s: float, turns: int) -> None:
        if self._task is None:
            self._task = self._progress.add_task("replay", total=total_s, played=0.0, turns=0)
        self._progress.update(self._task, completed=min(played_s, total_s), played=played_s, turns=turns)
