"""The one report pipeline: a source's raw spans → normalisers → analysis → report steps → Report.

Every report goes through ``build_report``: trace files and run folders (``report PATH``), Jaeger's query
API (``report --jaeger``), the table ``run`` prints at the end, ``diff`` and ``check``. Readers (voicetrace.traces)
only read; the normalisers (voicetrace.traces.normalise) map other tracers' spans onto ours; the analysis
(voicetrace.analysis.report) computes the turns table and summary; each step (``STEPS``) returns a new
Report with more joined in (today: the acoustic check of run folders' call recordings).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterable

from voicetrace.acoustic.runs import join_acoustic
from voicetrace.analysis.kvcache import ModelShape
from voicetrace.analysis.realtime import drop_impossible
from voicetrace.analysis.report import Report, analyse_normalised
from voicetrace.traces.normalise import NORMALISERS, Normaliser, normalise
from voicetrace.traces.tables import SpanTables


@dataclass(frozen=True)
class Step:
    """A named step after the analysis: Report → a new Report (the input is not changed)."""

    name: str
    apply: Callable[[Report], Report]


def _drop_impossible(report: Report) -> Report:
    return dataclasses.replace(report, turns=drop_impossible(report.turns.copy()))


STEPS: tuple[Step, ...] = (
    Step("acoustic", join_acoustic),  # run folders: acoustic V2V from the call recording beside each trace
    Step("impossible", _drop_impossible),  # a negative acoustic V2V is not shown as a number either
)


def build_report(tables: SpanTables, budget_ms: float = 1000.0, model_shape: ModelShape | None = None,
                 sources: Iterable[str] = (), normalisers: Iterable[Normaliser] = NORMALISERS,
                 steps: Iterable[Step] = STEPS) -> Report:
    """The report of one source's raw SpanTables (as any reader in voicetrace.traces returns them)."""
    report = analyse_normalised(normalise(tables, normalisers), budget_ms, model_shape, [str(s) for s in sources])
    for step in steps:
        report = step.apply(report)
    return report
