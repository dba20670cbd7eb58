"""``voicetrace analyze RECORDING``: turns, response gaps, barge-ins, silences and talk ratio from a
dual-channel recording (no pipeline), as terminal / --json / HTML, plus a trace of its speech segments."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from typing import Optional

import typer

from voicetrace.cli.app import app, console, err_console
from voicetrace.errors import InputError, UsageError


def default_trace_path(recording: Path) -> Path:
    return Path(f"{recording.stem}.trace.jsonl")


def analyze_command(recording: Path, console: Console, err_console: Console, caller_channel: int = 0,
                    agent_channel: int = 1, output: Path | None = None, as_json: bool = False,
                    trace: Path | None = None, no_trace: bool = False, long_silence_ms: float = 2000.0,
                    service_name: str = "voicetrace") -> None:
    from voicetrace.audio.file import AudioInputError
    from voicetrace.acoustic.runs import analyze_recording
    from voicetrace.acoustic.trace import write_trace
    from voicetrace.render.acoustic import renderer

    if caller_channel < 0 or agent_channel < 0:
        raise UsageError("--caller-channel and --agent-channel must be 0 or more")
    if caller_channel == agent_channel:
        raise UsageError(f"--caller-channel and --agent-channel are both {caller_channel}; they must differ")
    if long_silence_ms <= 0:
        raise UsageError(f"--long-silence-ms must be positive, not {long_silence_ms:g}")
    try:
        analysis = analyze_recording(recording, caller_channel, agent_channel, long_silence_ms=long_silence_ms)
    except AudioInputError as exc:
        raise InputError(str(exc)) from None
    if as_json:
        renderer("json")(analysis, sys.stdout)
    else:
        renderer("terminal")(analysis, console.file)
    notes = err_console if as_json else console
    if output is not None:
        from voicetrace.cli.report import write_output

        size = write_output(output, renderer("html"), analysis)
        notes.print(f"wrote {output} ({size / 2**20:.1f} MB, opens offline)", highlight=False, soft_wrap=True)
    if not no_trace:
        path = trace or default_trace_path(recording)
        try:
            count = write_trace(analysis, path, service_name=service_name)
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror}") from None
        notes.print(f"wrote {path} ({count} spans: conversation → turn → user.speech / bot.speech; "
                    f"voicetrace report / diff read it)", highlight=False, soft_wrap=True)


@app.command()
def analyze(
    recording: Path = typer.Argument(..., help="A dual-channel call recording (WAV, FLAC, OGG; any common rate)."),
    caller_channel: int = typer.Option(0, "--caller-channel", help="Channel that holds the caller (0-based)."),
    agent_channel: int = typer.Option(1, "--agent-channel", help="Channel that holds the agent (0-based)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Also write one self-contained HTML report."),
    as_json: bool = typer.Option(False, "--json", help="Print the analysis as JSON instead of tables."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Where to write the trace (default: RECORDING-stem.trace.jsonl here)."),
    no_trace: bool = typer.Option(False, "--no-trace", help="Write no trace file."),
    long_silence_ms: float = typer.Option(2000.0, "--long-silence-ms", help="Silences on both channels at least this long are listed."),
) -> None:
    """Turns, response gaps, barge-ins, long silences and talk ratio from the audio alone (no pipeline)."""
    analyze_command(recording, console, err_console, caller_channel=caller_channel, agent_channel=agent_channel,
                    output=output, as_json=as_json, trace=trace, no_trace=no_trace, long_silence_ms=long_silence_ms)
