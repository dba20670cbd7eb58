"""Normalisers: other tracers' spans → voicetrace's span model, each a named ``SpanTables → SpanTables``.

Every source (trace files, Jaeger) is read raw and goes through ``NORMALISERS`` in order, in the one
report pipeline (voicetrace.report). A normaliser returns new tables (never changes its input), leaves
spans it does not recognise alone, and is a no-op on tables it already normalised. What it finds but
does not turn into spans goes in ``SpanTables.notes`` under its name. The readers issue adds LiveKit
and OpenInference mappings here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from voicetrace.traces.pipecat import map_pipecat
from voicetrace.traces.server_spans import derive_server_spans
from voicetrace.traces.tables import SpanTables


@dataclass(frozen=True)
class Normaliser:
    name: str
    apply: Callable[[SpanTables], SpanTables]


NORMALISERS: tuple[Normaliser, ...] = (
    Normaliser("pipecat", map_pipecat),  # pipecat's own tracing: stt → asr, metrics.ttfb → first-token events
    Normaliser("server_spans", derive_server_spans),  # vLLM/SGLang request spans → llm.server.* intervals
)


def normalise(tables: SpanTables, normalisers: Iterable[Normaliser] = NORMALISERS) -> SpanTables:
    for normaliser in normalisers:
        tables = normaliser.apply(tables)
    return tables
