"""Compare two summaries: per metric and stage, p50/p95 of both, the change, better or worse."""

from __future__ import annotations

import math

import pandas as pd

from voicetrace.analysis.metrics import HEADLINE, STAGES
from voicetrace.analysis.summary import Summary

ROWS = list(HEADLINE) + [s for s in STAGES if s not in HEADLINE]
"""The headline metrics, then each stage (metrics registry)."""
SAME_MS = 1.0
SAME_SHARE = 0.01
"""A change within max(1 ms, 1 %) of A is 'same'."""


def _verdict(a, b, higher_is_better: bool = False, same_abs: float = SAME_MS) -> str:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return "n/a"
    change = b - a
    if abs(change) <= max(same_abs, SAME_SHARE * abs(a)):
        return "same"
    better = change > 0 if higher_is_better else change < 0
    return "better" if better else "worse"


def diff(a: Summary, b: Summary, stats=("p50", "p95")) -> pd.DataFrame:
    """Rows: metric, stat, a, b, change, change_pct, verdict, few (a percentile from too few values)."""
    rows = []
    for name in ROWS:
        sa, sb = a.get(name), b.get(name)
        if sa.n == 0 and sb.n == 0:
            continue
        for key in stats:
            va, vb = sa.raw.get(key), sb.raw.get(key)
            change = None if va is None or vb is None else vb - va
            rows.append({
                "metric": name, "stat": key, "a": va, "b": vb, "a_n": sa.n, "b_n": sb.n, "change": change,
                "change_pct": None if change is None or not va else 100.0 * change / va,
                "verdict": _verdict(va, vb), "few": not (sa.enough(key) and sb.enough(key)),
            })
    change = None if a.goodput is None or b.goodput is None else b.goodput - a.goodput
    rows.append({"metric": "goodput", "stat": f"V2V ≤ {b.budget_ms:g} ms", "a": a.goodput, "b": b.goodput,
                 "a_n": a.goodput_n, "b_n": b.goodput_n, "change": change, "change_pct": None,
                 "verdict": _verdict(a.goodput, b.goodput, higher_is_better=True, same_abs=0.005), "few": False})
    return pd.DataFrame(rows)
