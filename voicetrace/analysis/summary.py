"""Headline numbers over many turns: percentiles with counts, voice goodput, per-language split.

Every renderer (terminal, JSON, HTML) and ``check``/``diff`` read these, so one set of numbers
exists. A percentile computed from fewer values than ``MIN_TURNS_FOR`` asks for is kept (``raw``)
but reported as not enough (``None`` in JSON, the count shown instead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from voicetrace.analysis.metrics import ALIASES, METRICS, SUMMARY

PERCENTILES = (50, 90, 95, 99)
MIN_TURNS_FOR = {50: 1, 90: 10, 95: 20, 99: 100}
"""Below this many values a percentile is close to the maximum; renderers say so instead of showing it."""


def too_few_note() -> str:
    """'p90 ≥10, p95 ≥20, p99 ≥100': the rule, as the renderers' notes state it."""
    return ", ".join(f"p{p} ≥{n}" for p, n in MIN_TURNS_FOR.items() if n > 1)


@dataclass(frozen=True)
class Stat:
    """Distribution of one metric, milliseconds."""

    n: int
    raw: dict  # "p50".. "p99" → value (even when too few values), plus "max", "mean"

    def value(self, key: str) -> float | None:
        """The statistic, or None when there are too few values for it (or none)."""
        v = self.raw.get(key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if key.startswith("p") and self.n < MIN_TURNS_FOR.get(int(key[1:]), 1):
            return None
        return v

    def enough(self, key: str) -> bool:
        return not key.startswith("p") or self.n >= MIN_TURNS_FOR.get(int(key[1:]), 1)

    def to_dict(self) -> dict:
        out = {"n": self.n}
        for key in [f"p{p}" for p in PERCENTILES] + ["mean", "max"]:
            out[key] = _round(self.value(key))
        short = [f"p{p} needs ≥{MIN_TURNS_FOR[p]}" for p in PERCENTILES if self.n and self.n < MIN_TURNS_FOR[p]]
        if short:
            out["note"] = f"only {self.n} value(s): " + ", ".join(short)
        return out


def stat(values) -> Stat:
    """The distribution of ``values`` (NaN and non-numbers dropped): p50–p99 (numpy's linear
    interpolation), max, mean; ``Stat.value`` withholds a percentile from too few values."""
    values = pd.to_numeric(pd.Series(values, dtype="float64"), errors="coerce").dropna().to_numpy()
    if len(values) == 0:
        return Stat(0, {})
    raw = {f"p{p}": float(v) for p, v in zip(PERCENTILES, np.percentile(values, PERCENTILES))}
    raw["max"] = float(values.max())
    raw["mean"] = float(values.mean())
    return Stat(len(values), raw)


@dataclass(frozen=True)
class Summary:
    calls: int
    turns: int
    budget_ms: float
    metrics: dict  # name → Stat
    goodput: float | None  # share of turns with V2V measured whose V2V ≤ budget_ms
    goodput_n: int  # turns with V2V measured
    languages: dict = field(default_factory=dict)  # language → {"turns", "v2v": Stat, "ttft": Stat}

    def get(self, name: str) -> Stat:
        return self.metrics.get(ALIASES.get(name, name), Stat(0, {}))

    def to_dict(self) -> dict:
        return {
            "calls": self.calls,
            "turns": self.turns,
            "budget_ms": self.budget_ms,
            "goodput": _round(self.goodput, 4),
            "goodput_turns": self.goodput_n,
            "metrics_ms": {name: s.to_dict() for name, s in self.metrics.items()},
            "languages": {
                lang: {"turns": v["turns"], "v2v_ms": v["v2v"].to_dict(), "ttft_ms": v["ttft"].to_dict()}
                for lang, v in self.languages.items()
            },
        }


def summarize(turns: pd.DataFrame, gaps: pd.DataFrame, budget_ms: float = 1000.0) -> Summary:
    """``turns``: turn_metrics joined with the breakdown and per-turn ITL; ``gaps``: token_gaps."""
    metrics = {}
    for name in SUMMARY:
        m = METRICS[name]
        source = gaps if m.over == "gaps" else turns
        metrics[name] = stat(source[m.column] if m.column in source else [])
    v2v = pd.to_numeric(turns["v2v_ms"], errors="coerce").dropna() if "v2v_ms" in turns else pd.Series(dtype=float)
    goodput = float((v2v <= budget_ms).mean()) if len(v2v) else None
    languages = {}
    if "language" in turns and turns["language"].notna().any():
        for lang, rows in turns.groupby(turns["language"].fillna("unknown"), sort=True):
            languages[str(lang)] = {"turns": len(rows), "v2v": stat(rows["v2v_ms"]), "ttft": stat(rows["ttft_ms"])}
    calls = int(turns[["trace_id", "conversation"]].drop_duplicates().shape[0]) if len(turns) else 0
    return Summary(calls, len(turns), float(budget_ms), metrics, goodput, len(v2v), languages)


def _round(value, digits: int = 3):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), digits)
