"""voicetrace's command line: thin wrappers that parse, call the library and print.

Errors a user can cause print one line and exit non-zero; no tracebacks.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from voicetrace.errors import EXIT_INPUT, EXIT_RUNTIME, EXIT_SIGINT, EXIT_USAGE, EXIT_VIOLATION

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Where every millisecond of a voice agent's reply goes.",
    pretty_exceptions_enable=False,
)
# Off a terminal (CI logs, pipes) rich assumes 80 columns, too narrow for the turn table.
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True)


def _fail(message: str, code: int) -> "typer.Exit":
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


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
    llm_timeout_s: float = typer.Option(30.0, "--llm-timeout-s", help="An LLM server that sends nothing for this long (before answering or mid-stream) ends that turn's LLM call with an error span; the run goes on."),
) -> None:
    """Replay CALL in real time through the reference pipeline; one span per stage of each turn."""
    from voicetrace.errors import UserError
    from voicetrace.otel.live import export_summary, quiet_exporter_logs
    from voicetrace.otel.target import resolve_otlp_target
    from voicetrace.run import RunInterrupted, RunOptions, run_call
    from voicetrace.run.options import parse_settings

    def warn(message: str) -> None:
        err_console.print(f"[yellow]warning:[/] {message}", highlight=False, soft_wrap=True)

    try:
        options = RunOptions(
            call_path=call, out_dir=out, llm_url=llm_url, llm_model=model, caller_channel=caller_channel,
            capture_content=True if capture_content else None, redact=redact, vad=vad, tools=tools,
            tools_db=tools_db, run_id=run_id, asr_mode=asr, asr_model=asr_model, language=language,
            overrides=parse_settings(settings or []), service_name=service_name, environment=environment,
            llm_stall_timeout_s=llm_timeout_s, on_warning=warn,
        )
        options.otlp = resolve_otlp_target(otlp, otlp_protocol, os.environ)
        options.validate()  # every usage mistake before the progress line (run_call checks again)
        quiet_exporter_logs()
        with _RunProgress() as progress:
            result = run_call(options, progress.update)
    except UserError as exc:
        raise _fail(exc.message, exc.exit_code)
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
    _report_file(result.trace_path)


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


def _report_file(trace: Path) -> None:
    """After a run: the same report ``voicetrace report RUN_FOLDER`` prints (voicetrace.report pipeline)."""
    from voicetrace.commands.report import print_run_report
    from voicetrace.run.folder import RunFolder

    _analysis(print_run_report, RunFolder.of(trace).path)


@app.command()
def report(
    traces: Optional[List[Path]] = typer.Argument(None, help="trace.jsonl files or run folders."),
    jaeger: Optional[str] = typer.Option(None, "--jaeger", help="Read the spans from Jaeger's query API instead: http://HOST:16686."),
    service: Optional[str] = typer.Option(None, "--service", help="With --jaeger: the service.name whose traces to read."),
    since: str = typer.Option("1h", "--since", help="With --jaeger: how far back to look (30m, 1h, 2d)."),
    trace_id: Optional[List[str]] = typer.Option(None, "--trace-id", help="With --jaeger: read this trace only (repeatable)."),
    limit: int = typer.Option(20, "--limit", help="With --jaeger: at most this many traces, newest first."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Also write one self-contained HTML report (opens offline)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary and every turn as JSON instead of tables."),
    budget_ms: float = typer.Option(1000.0, "--budget-ms", help="V2V budget for voice goodput (share of turns within it)."),
    gguf: Optional[Path] = typer.Option(None, "--gguf", help="Model file whose header gives the KV-cache shape (default: the run's embedded model)."),
    model_shape: Optional[str] = typer.Option(None, "--model-shape", help="KV-cache shape instead of --gguf: LAYERS,KV_HEADS,HEAD_DIM[,BYTES_PER_VALUE]."),
) -> None:
    """Per-turn latency table and percentiles from recorded spans (DESIGN.md metric definitions)."""
    if jaeger or not traces:
        _report_jaeger(traces, jaeger, service, since, trace_id, limit, output=output, as_json=as_json,
                       budget_ms=budget_ms, gguf=gguf, model_shape=model_shape)
        return
    from voicetrace.commands.report import report_command

    _analysis(report_command, list(traces), output=output, as_json=as_json, budget_ms=budget_ms, gguf=gguf,
              model_shape=model_shape)


def _analysis(command, *args, **kwargs) -> None:
    """Run an analysis command (voicetrace.commands); its user errors become one line and an exit code."""
    from voicetrace.commands import CommandError

    try:
        command(*args, console=console, err_console=err_console, **kwargs)
    except CommandError as exc:
        raise _fail(exc.message, exc.code)


def _report_jaeger(traces, jaeger, service, since, trace_ids, limit, budget_ms, gguf, model_shape,
                   **report_options) -> None:
    """The same report as from files (the same pipeline), from the spans Jaeger's query API gives back."""
    from voicetrace.commands import CommandError
    from voicetrace.commands.inputs import build_from_jaeger
    from voicetrace.commands.report import report_command

    if not jaeger:
        raise _fail("give trace files or run folders, or --jaeger http://HOST:16686 --service NAME", EXIT_USAGE)
    if traces:
        raise _fail("give trace files or --jaeger, not both", EXIT_USAGE)
    try:
        report = build_from_jaeger(jaeger, service, since, trace_ids, limit, budget_ms, gguf, model_shape)
    except CommandError as exc:
        raise _fail(exc.message, exc.code)
    _analysis(report_command, [], report=report, **report_options)


@app.command()
def doctor() -> None:
    """List each component of the embedded default (found or missing, version, path)."""
    from rich.table import Table

    from voicetrace.components import embedded_components

    table = Table(title="voicetrace components (embedded default)")
    for column in ("component", "status", "version", "path / what to do"):
        table.add_column(column)
    missing_required = []
    for comp in embedded_components():
        status = "[green]found[/]" if comp.found else ("[red]missing[/]" if comp.required else "[yellow]missing[/]")
        table.add_row(comp.name, status, comp.version or "-", str(comp.path) if comp.found else comp.hint)
        if comp.required and not comp.found:
            missing_required.append(comp.name)
    console.print(table)
    if missing_required:
        raise _fail(
            f"the embedded default cannot run, missing: {', '.join(missing_required)}. Run `make install`.",
            EXIT_VIOLATION,
        )
    console.print("[green]ready:[/] the embedded default can run")


from voicetrace.commands.cli import register as _register_analysis_commands  # noqa: E402

_register_analysis_commands(app, _analysis)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(EXIT_SIGINT)


if __name__ == "__main__":
    main()
