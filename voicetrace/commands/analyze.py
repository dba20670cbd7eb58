"""``voicetrace analyze RECORDING``: turns, response gaps, barge-ins, silences and talk ratio from a
dual-channel recording (no pipeline), as terminal / --json / HTML, plus a trace of its speech segments."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from voicetrace.commands import EXIT_INPUT, EXIT_USAGE, CommandError


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
        raise CommandError("--caller-channel and --agent-channel must be 0 or more", EXIT_USAGE)
    if caller_channel == agent_channel:
        raise CommandError(f"--caller-channel and --agent-channel are both {caller_channel}; they must differ", EXIT_USAGE)
    if long_silence_ms <= 0:
        raise CommandError(f"--long-silence-ms must be positive, not {long_silence_ms:g}", EXIT_USAGE)
    try:
        analysis = analyze_recording(recording, caller_channel, agent_channel, long_silence_ms=long_silence_ms)
    except AudioInputError as exc:
        raise CommandError(str(exc), EXIT_INPUT) from None
    if as_json:
        renderer("json")(analysis, sys.stdout)
    else:
        renderer("terminal")(analysis, console.file)
    notes = err_console if as_json else console
    if output is not None:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            with open(output, "w", encoding="utf-8") as handle:
                renderer("html")(analysis, handle)
        except OSError as exc:
            raise CommandError(f"{output}: {exc.strerror}", EXIT_INPUT) from None
        notes.print(f"wrote {output} ({output.stat().st_size / 2**20:.1f} MB, opens offline)", highlight=False, soft_wrap=True)
    if not no_trace:
        path = trace or default_trace_path(recording)
        try:
            count = write_trace(analysis, path, service_name=service_name)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}", EXIT_INPUT) from None
        notes.print(f"wrote {path} ({count} spans: conversation → turn → user.speech / bot.speech; "
                    f"voicetrace report / diff read it)", highlight=False, soft_wrap=True)
