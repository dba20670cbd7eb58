"""Latency budgets (a CI gate): parse a budgets TOML document, check a Summary against it.

    v2v_budget_ms = 1000   # optional: the V2V budget goodput counts against (else --budget-ms)
    goodput = 0.9          # at least this share of turns within it
    [v2v]
    p95 = 1000             # at most, ms
    [ttft]
    p50 = 300              # dotted keys work too: ttft.p50 = 300

A percentile from too few turns is checked through the maximum (an upper bound of every
percentile), so a short run can pass a gate only when even its worst turn does.
"""

from __future__ import annotations

from dataclasses import dataclass

from voicetrace.analysis.metrics import METRICS, SUMMARY, resolve
from voicetrace.analysis.summary import PERCENTILES, Summary

STATS = tuple(f"p{p}" for p in PERCENTILES) + ("max", "mean")


class BudgetError(ValueError):
    """A budgets document that can't be understood; one line for the user."""


@dataclass(frozen=True)
class Budget:
    metric: str
    stat: str
    op: str  # "<=" or ">="
    limit: float

    def __str__(self) -> str:
        name = "goodput" if self.metric == "goodput" else f"{self.metric}.{self.stat}"
        return f"{name} {self.op} {self.limit:g}"


@dataclass(frozen=True)
class Result:
    budget: Budget
    actual: float | None
    ok: bool
    note: str = ""


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BudgetError(f"{where} must be a number, not {value!r}")
    return float(value)


def _metric(name: str) -> str:
    """The registry key a budget names (key or alias); only metrics with a summary can be budgeted."""
    try:
        key = resolve(name)
    except KeyError:
        key = None
    if key is None or not METRICS[key].summary:
        raise BudgetError(f"unknown metric {name!r}; known: {', '.join(sorted(SUMMARY))}, goodput")
    return key


def parse(doc: dict) -> tuple[list[Budget], float | None]:
    """Budgets and the goodput V2V budget (None: not given) from a parsed TOML document."""
    budgets = []
    v2v_budget = None
    for key, value in doc.items():
        if key == "v2v_budget_ms":
            v2v_budget = _number(value, key)
            if v2v_budget <= 0:
                raise BudgetError("v2v_budget_ms must be positive")
        elif key == "goodput":
            limit = _number(value, key)
            if not 0 <= limit <= 1:
                raise BudgetError(f"goodput is a share of turns between 0 and 1, not {limit:g}")
            budgets.append(Budget("goodput", "share", ">=", limit))
        elif isinstance(value, dict):
            metric = _metric(key)
            for stat, limit in value.items():
                if stat not in STATS:
                    raise BudgetError(f"{key}.{stat}: unknown statistic; use one of {', '.join(STATS)}")
                budgets.append(Budget(metric, stat, "<=", _number(limit, f"{key}.{stat}")))
        else:
            raise BudgetError(f"{key} = {value!r}: write budgets as METRIC.STAT = MS (e.g. v2v.p95 = 1000) or goodput = 0.9")
    if not budgets:
        raise BudgetError("no budgets in the file (e.g. v2v.p95 = 1000, goodput = 0.9)")
    return budgets, v2v_budget


def check(summary: Summary, budgets: list[Budget]) -> list[Result]:
    results = []
    for budget in budgets:
        if budget.metric == "goodput":
            actual = summary.goodput
            note = f"{summary.goodput_n} turn(s), V2V ≤ {summary.budget_ms:g} ms"
            ok = actual is not None and actual >= budget.limit
            results.append(Result(budget, actual, ok, note if actual is not None else "no turn has a V2V"))
            continue
        stat = summary.get(budget.metric)
        if stat.n == 0:
            results.append(Result(budget, None, False, "not measured in any turn"))
            continue
        actual, note = stat.raw[budget.stat], f"n={stat.n}"
        if not stat.enough(budget.stat):
            actual, note = stat.raw["max"], f"only {stat.n} value(s): checked the maximum"
        results.append(Result(budget, actual, actual <= budget.limit, note))
    return results
