"""The typer commands ``diff``, ``check`` and ``whatif``, registered on voicetrace's app."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def register(app: typer.Typer, run) -> None:
    """``run(command, *args, **kwargs)`` calls a voicetrace.commands function and turns its errors into exits."""

    @app.command()
    def diff(
        a: Path = typer.Argument(..., help="Baseline: a trace file or run folder."),
        b: Path = typer.Argument(..., help="Candidate: a trace file or run folder."),
        budget_ms: float = typer.Option(1000.0, "--budget-ms", help="V2V budget for voice goodput."),
    ) -> None:
        """Per metric and stage: p50/p95 of A and B, the change, better or worse."""
        from voicetrace.commands.compare import diff_command

        run(diff_command, a, b, budget_ms=budget_ms)

    @app.command()
    def check(
        traces: List[Path] = typer.Argument(..., help="Trace files or run folders."),
        budget: Path = typer.Option(..., "--budget", help="budgets.toml: e.g. v2v.p95 = 1000, ttft.p50 = 300, goodput = 0.9."),
        budget_ms: Optional[float] = typer.Option(None, "--budget-ms", help="V2V budget for goodput (default: the file's v2v_budget_ms, else 1000)."),
    ) -> None:
        """Exit 1 and list each violated budget (a CI gate)."""
        from voicetrace.commands.compare import check_command

        run(check_command, list(traces), budget, budget_ms=budget_ms)

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
        from voicetrace.commands.analyze import analyze_command

        run(analyze_command, recording, caller_channel=caller_channel, agent_channel=agent_channel, output=output,
            as_json=as_json, trace=trace, no_trace=no_trace, long_silence_ms=long_silence_ms)

    @app.command()
    def whatif(
        traces: List[Path] = typer.Argument(..., help="Trace files or run folders."),
        stage: str = typer.Option(..., "--stage", help="endpointing, asr, llm, queue, prefill, tools, first_sentence, tts or transport."),
        faster_ms: float = typer.Option(..., "--faster-ms", help="How much faster the stage would be, ms."),
    ) -> None:
        """Recompute V2V along each turn's critical path with one stage faster."""
        from voicetrace.commands.compare import whatif_command

        run(whatif_command, list(traces), stage, faster_ms)
