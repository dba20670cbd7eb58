"""The span model every reader produces and every normaliser takes: two DataFrames and notes.

``Rows`` is the one way rows become a ``SpanTables``: readers append tuples in ``SPAN_COLUMNS`` /
``EVENT_COLUMNS`` order (times already checked to be int64 nanoseconds ≥ 0) and what they skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

SPAN_COLUMNS = [
    "trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns",
    "attributes", "status_code", "service", "source",
]
EVENT_COLUMNS = ["trace_id", "span_id", "name", "time_ns", "attributes"]


@dataclass
class SpanTables:
    spans: pd.DataFrame
    events: pd.DataFrame
    skipped_lines: list[tuple[str, int, str]] = field(default_factory=list)
    """(file or source, line, reason) of every line or span a reader could not read."""
    notes: dict[str, pd.DataFrame] = field(default_factory=dict)
    """What a normaliser found and did not turn into spans, by normaliser (e.g. ``server_skew``)."""

    @property
    def skipped(self) -> int:
        return len(self.skipped_lines)

    def skipped_note(self, limit: int = 10) -> str:
        """One line: how many lines/spans were skipped and where (file:line, reason)."""
        if not self.skipped_lines:
            return ""
        lines = self.skipped_lines
        where = "; ".join(f"{Path(path).name}:{line} ({reason})" for path, line, reason in lines[:limit])
        more = f"; and {len(lines) - limit} more" if len(lines) > limit else ""
        return f"skipped {len(lines)} unreadable line(s)/span(s): {where}{more}"

    def replaced(self, spans: pd.DataFrame | None = None, events: pd.DataFrame | None = None,
                 notes: dict[str, pd.DataFrame] | None = None) -> "SpanTables":
        """New tables with these spans/events and these notes added; skipped lines travel along."""
        return SpanTables(self.spans if spans is None else spans, self.events if events is None else events,
                          self.skipped_lines, {**self.notes, **(notes or {})})


def spans_frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=SPAN_COLUMNS).astype({"start_ns": "int64", "end_ns": "int64"})


def events_frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=EVENT_COLUMNS).astype({"time_ns": "int64"})


@dataclass
class Rows:
    """Rows collected by a reader, and where it skipped what."""

    spans: list[tuple] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)
    skipped: list[tuple[str, int, str]] = field(default_factory=list)

    def skip(self, source: str, line: int, reasons: list[str]) -> None:
        self.skipped.extend((source, line, reason) for reason in reasons)

    def tables(self) -> SpanTables:
        return SpanTables(spans_frame(self.spans), events_frame(self.events), self.skipped)
