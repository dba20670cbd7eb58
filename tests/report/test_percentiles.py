"""The one percentile function (summary.stat): its values on small inputs worked out by hand, and the
"too few turns" rule at its boundaries (p90 needs 10 values, p95 20, p99 100).

Expected values are numpy's default (linear) percentile done by hand: sort, position = (n − 1) · p/100,
interpolate between the two values around it. For ``range(n)`` every value equals its position, so
the p-th percentile is simply (n − 1) · p/100.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from voicetrace.analysis.budgets import Budget, check
from voicetrace.analysis.summary import stat
from voicetrace.render.fmt import stat_ms

from tests.report.test_analysis import report_for
from tests.report.synth import Turn


def test_values_on_five_known_numbers():
    s = stat([50, 10, 40, 30, 20])  # sorted 10 20 30 40 50; positions 0..4
    assert s.n == 5
    assert s.raw["p50"] == pytest.approx(30)  # position 2
    assert s.raw["p90"] == pytest.approx(46)  # position 3.6: 40 + 0.6 · 10
    assert s.raw["p95"] == pytest.approx(48)  # position 3.8
    assert s.raw["p99"] == pytest.approx(49.6)  # position 3.96
    assert s.raw["max"] == 50 and s.raw["mean"] == pytest.approx(30)


def test_missing_values_are_dropped_not_counted_as_zero():
    s = stat([7, None, 3, float("nan"), 1, 9, 5, 2, 10, 4, 6, 8])  # 1..10 with two holes
    assert s.n == 10
    assert s.value("p50") == pytest.approx(5.5)  # position 4.5 between 5 and 6
    assert s.value("p90") == pytest.approx(9.1)  # position 8.1
    assert s.raw["p95"] == pytest.approx(9.55) and s.value("p95") is None  # 10 values: p95 withheld
    assert s.value("mean") == pytest.approx(5.5) and s.value("max") == 10


def test_values_on_twenty_and_a_hundred_numbers():
    twenty = stat([5 * i for i in range(20)])  # 0, 5, .. 95
    assert twenty.value("p50") == pytest.approx(47.5)  # position 9.5
    assert twenty.value("p90") == pytest.approx(85.5)  # position 17.1: 85 + 0.1 · 5
    assert twenty.value("p95") == pytest.approx(90.25)  # position 18.05
    assert twenty.value("p99") is None and twenty.raw["p99"] == pytest.approx(94.05)
    hundred = stat(range(1, 101))
    assert [hundred.value(k) for k in ("p50", "p90", "p95", "p99")] == pytest.approx([50.5, 90.1, 95.05, 99.01])


def test_no_values():
    s = stat([None, float("nan")])
    assert s.n == 0 and s.value("p50") is None and s.value("max") is None
    assert stat_ms(s, "p50") == "—"


@pytest.mark.parametrize("p, needs", [(90, 10), (95, 20), (99, 100)])
def test_too_few_turns_rule_at_the_boundary(p, needs):
    key = f"p{p}"
    short, enough = stat(range(needs - 1)), stat(range(needs))
    assert short.raw[key] == pytest.approx((needs - 2) * p / 100)  # computed, but withheld
    assert not short.enough(key) and short.value(key) is None and short.to_dict()[key] is None
    assert f"{key} needs ≥{needs}" in short.to_dict()["note"]
    assert stat_ms(short, key) == f"n={needs - 1} <{needs}"
    assert enough.enough(key) and enough.value(key) == pytest.approx((needs - 1) * p / 100)
    assert enough.to_dict()[key] == pytest.approx(round((needs - 1) * p / 100, 3))
    assert f"{key} needs" not in enough.to_dict().get("note", "")
    assert stat_ms(enough, key) == f"{(needs - 1) * p / 100:,.0f}"


@pytest.mark.parametrize("p, needs", [(90, 10), (95, 20), (99, 100)])
def test_a_budget_on_too_few_turns_is_checked_through_the_maximum(p, needs):
    from voicetrace.analysis.summary import Summary

    def summary(n):
        return Summary(1, n, 1000.0, {"v2v": stat(range(n))}, None, 0)

    limit = (needs - 1.5) * p / 100  # between the percentile and the maximum of needs − 1 values
    short = check(summary(needs - 1), [Budget("v2v", f"p{p}", "<=", limit)])[0]
    assert short.actual == needs - 2 and not short.ok and "checked the maximum" in short.note
    ok = check(summary(needs), [Budget("v2v", f"p{p}", "<=", (needs - 1) * p / 100 + 0.01)])[0]
    assert ok.actual == pytest.approx((needs - 1) * p / 100) and ok.ok


def test_report_summary_values_over_five_turns(tmp_path):
    r = report_for(tmp_path, [Turn(at=1000 + 8000 * i, ttft=100 + 10 * i) for i in range(5)])
    ttft = r.summary.get("ttft")  # 100 110 120 130 140
    assert ttft.n == 5 and ttft.value("p50") == pytest.approx(120, abs=1e-6)
    assert ttft.raw["p90"] == pytest.approx(136, abs=1e-6)  # position 3.6
    assert r.summary.get("llm").raw == ttft.raw  # the alias names the same numbers


def test_the_headline_shows_the_count_when_too_few(tmp_path):
    """The headline (what `report` and the end of `run` print): 4 turns give p50, then counts."""
    from voicetrace.render.terminal import render

    r = report_for(tmp_path, [Turn(at=1000 + 8000 * i, ttft=100 + 10 * i) for i in range(4)])
    out = io.StringIO()
    render(r, out)
    ttft = next(line for line in out.getvalue().splitlines() if line.startswith("│TTFT "))
    cells = [c.strip() for c in ttft.strip("│").split("│")]
    # TTFT p50 of 100 110 120 130: position 1.5, 110 + 0.5 · 10; p90/p95/p99 say how few turns there are
    assert cells[1:6] == ["4", "115", "n=4 <10", "n=4 <20", "n=4 <100"] and "≈max" not in out.getvalue()
