"""``report --json``: the summary, per-turn rows and breakdown as one JSON document."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pandas as pd

from voicetrace.analysis.metrics import METRICS, PER_TURN, SEGMENTS

TURN_FIELDS = ["conversation", "trace_id", "turn", "at_s", "interrupted", "language", *PER_TURN]
"""A turn row: where it is, then every per-turn metric of the registry (breakdown under ``breakdown_ms``)."""


def _clean(value):
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else round(float(value), 3)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def report_dict(report) -> dict:
    turns = report.turns
    rows = []
    content = report.content_captured
    fields = TURN_FIELDS + (["transcript", "llm_output"] if content else [])
    acoustic = getattr(report, "acoustic", None)
    if acoustic is not None:  # acoustic V2V from the run's call.wav beside the event V2V (voicetrace.acoustic)
        from voicetrace.acoustic.check import CHECK_COLUMNS

        fields = fields + CHECK_COLUMNS
    bd_cols = {s: METRICS[s].segment_column for s in SEGMENTS
               if not METRICS[s].measured_only or (len(turns) and turns[METRICS[s].segment_column].notna().any())}
    if len(turns) and "loop_blocked_ms" in turns and turns["loop_blocked_ms"].notna().any():
        fields = fields + ["loop_blocked_ms", "loop_blocker", "queue_waits_ms"]  # measured by the capture
    for col in ("ttft_wire_ms", "llm_delivery_lag_ms"):  # measured at the socket (capture.wire), when any
        if len(turns) and col in turns and turns[col].notna().any():
            fields = fields + [col]
    for flag in ("behind_real_time", "impossible"):  # reasons / metric names (analysis.realtime), when any
        if len(turns) and flag in turns and turns[flag].notna().any():
            fields = fields + [flag]
    for rec in turns[fields + list(bd_cols.values())].to_dict("records") if len(turns) else []:
        row = {k: _clean(rec[k]) for k in fields}
        row["breakdown_ms"] = {s: _clean(rec[col]) for s, col in bd_cols.items()}
        rows.append(row)
    return {
        "summary": report.summary.to_dict(),
        "turns": rows,
        "other_spans": [{k: _clean(v) for k, v in r.items()} for r in report.other.to_dict("records")],
        "model_shape": report.model_shape.to_dict() if report.model_shape else None,
        "content_captured": content,
        "skipped_lines": report.tables.skipped,
        "server_clock_skew": [
            {"trace_id": r.trace_id, "llm_span_id": r.llm_span_id, "server_span_id": r.server_span_id, "skew_ms": r.skew_ms}
            for r in report.server_skew.itertuples()
        ],
        "sources": report.sources,
        "acoustic": acoustic_dict(acoustic),
    }


def acoustic_dict(acoustic) -> dict | None:
    """The acoustic check's barge-ins, warnings, recordings and detector settings (None without recordings)."""
    if acoustic is None:
        return None
    return {
        "tolerance_ms": acoustic.tolerance_ms,
        "recordings": acoustic.recordings,
        "vad": acoustic.vad,
        "barge_ins": [{k: _clean(v) for k, v in r.items()} for r in acoustic.barge_ins.to_dict("records")],
        "warnings": acoustic.warnings,
    }


def render(report, out) -> None:
    """Renderer interface: one JSON document to ``out``."""
    out.write(orjson.dumps(report_dict(report), option=orjson.OPT_INDENT_2).decode())
    out.write("\n")
