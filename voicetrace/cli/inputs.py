"""Shared input handling of the report commands: a source (trace paths or Jaeger) → Report through the one report pipeline
(voicetrace.report.build_report); the model shape from --model-shape / --gguf / the run's model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from voicetrace.errors import InputError, UsageError

def cache_dir() -> Path:
    return Path(os.environ.get("VOICETRACE_CACHE", Path.home() / ".cache" / "voicetrace"))


def run_models(paths: Iterable[Path]) -> list[str]:
    """The model each run folder's run.json names (the embedded default's GGUF is found by it)."""
    from voicetrace.run.folder import RunFolder

    models = []
    for path in paths:
        info = RunFolder.of(path).read_info() or {}
        pipeline = info.get("pipeline")
        model = pipeline.get("llm_model") if isinstance(pipeline, dict) else None
        if model:
            models.append(str(model))
    return models


def span_models(tables) -> list[str]:
    """The models the llm spans asked for (Jaeger holds no run.json)."""
    from voicetrace import semconv as sc

    llm = tables.spans[tables.spans["name"] == sc.SPAN_LLM]
    models = (a.get(sc.ATTR_GENAI_REQUEST_MODEL) for a in llm["attributes"] if isinstance(a, dict))
    return list(dict.fromkeys(str(m) for m in models if m))


def _cached_gguf(models: Iterable[str]) -> Path | None:
    for model in models:
        found = sorted((cache_dir() / "models").glob(f"{Path(model).name}*.gguf"))
        if found:
            return found[0]
    return None


def model_shape(gguf: Path | None, shape: str | None, models: Iterable[str] = ()):
    """--model-shape, else --gguf's header, else the cached GGUF of one of ``models`` (None if not found)."""
    from voicetrace.analysis.kvcache import parse_shape
    from voicetrace.traces.gguf import GGUFError, model_shape as read_shape

    if shape:
        try:
            return parse_shape(shape)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if gguf is not None:
        if not gguf.exists():
            raise InputError(f"{gguf}: no such file")
        return read_shape(gguf)
    auto = _cached_gguf(models)
    if auto is not None:
        try:
            return read_shape(auto)
        except GGUFError:
            return None
    return None


def _check_budget(budget_ms: float) -> None:
    if budget_ms <= 0:
        raise UsageError(f"--budget-ms must be positive, not {budget_ms:g}")


def build(paths: list[Path], budget_ms: float = 1000.0, gguf: Path | None = None, shape: str | None = None):
    """The Report of trace files / run folders."""
    from voicetrace.report import build_report
    from voicetrace.traces.files import read_trace_files

    _check_budget(budget_ms)
    tables = read_trace_files(paths)
    return build_report(tables, budget_ms, model_shape(gguf, shape, run_models(paths)), sources=paths)


def build_from_jaeger(url: str, service: str | None, since: str, trace_ids: list[str] | None, limit: int,
                      budget_ms: float = 1000.0, gguf: Path | None = None, shape: str | None = None):
    """The Report of the traces Jaeger's query API gives back: the same pipeline as for files."""
    from voicetrace.report import build_report
    from voicetrace.traces.jaeger import parse_since_s, read_jaeger

    _check_budget(budget_ms)
    tables = read_jaeger(url, service, parse_since_s(since), trace_ids, limit)
    return build_report(tables, budget_ms, model_shape(gguf, shape, span_models(tables)), sources=[url])
