"""Shared input handling: trace paths → SpanTables, model shape from --gguf / --model-shape / run.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

from voicetrace.commands import EXIT_INPUT, EXIT_USAGE, CommandError


def load_tables(paths: list[Path]):
    from voicetrace.traces.load import load
    from voicetrace.traces.otlp_json import TraceInputError

    try:
        return load(paths)
    except TraceInputError as exc:
        raise CommandError(str(exc), EXIT_INPUT) from None


def cache_dir() -> Path:
    return Path(os.environ.get("VOICETRACE_CACHE", Path.home() / ".cache" / "voicetrace"))


def _gguf_from_runs(paths: list[Path]) -> Path | None:
    """The embedded default's GGUF for a run folder whose run.json names its model."""
    for path in paths:
        run_json = (path if path.is_dir() else path.parent) / "run.json"
        try:
            model = json.loads(run_json.read_text())["pipeline"]["llm_model"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found = sorted((cache_dir() / "models").glob(f"{Path(str(model)).name}*.gguf"))
        if found:
            return found[0]
    return None


def model_shape(paths: list[Path], gguf: Path | None, shape: str | None):
    from voicetrace.analysis.kvcache import parse_shape
    from voicetrace.traces.gguf import GGUFError, model_shape as read_shape

    if shape:
        try:
            return parse_shape(shape)
        except ValueError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
    if gguf is not None:
        if not gguf.exists():
            raise CommandError(f"{gguf}: no such file", EXIT_INPUT)
        try:
            return read_shape(gguf)
        except GGUFError as exc:
            raise CommandError(str(exc), EXIT_INPUT) from None
    auto = _gguf_from_runs(paths)
    if auto is not None:
        try:
            return read_shape(auto)
        except GGUFError:
            return None
    return None


def build(paths: list[Path], budget_ms: float = 1000.0, gguf: Path | None = None, shape: str | None = None):
    from voicetrace.analysis.report import build_report

    if budget_ms <= 0:
        raise CommandError(f"--budget-ms must be positive, not {budget_ms:g}", EXIT_USAGE)
    from voicetrace.acoustic.runs import attach_acoustic

    tables = load_tables(paths)
    report = build_report(tables, budget_ms=budget_ms, model_shape=model_shape(paths, gguf, shape),
                          sources=[str(p) for p in paths])
    attach_acoustic(report)  # run folders: acoustic V2V from call.wav beside each trace
    return report
