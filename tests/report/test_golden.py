"""Golden check: the report on every example trace is what it was before the consolidation.

The files in tests/data/golden/ were written by `voicetrace report` at aba21e3 (before the code was
reorganised); a change that moves any number, column or line shows up here. Regenerate a golden
only for an intended change of behaviour, and say which in the commit.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import ROOT, VOICETRACE

DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "golden"
TRACES = sorted(p.name for p in GOLDEN.glob("*.report.json"))


def _report(name: str, *flags: str) -> str:
    done = subprocess.run([str(VOICETRACE), "report", f"tests/data/{name.removesuffix('.report.json')}", *flags],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "COLUMNS": "140"},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def _without_new_nulls(report, golden):
    """``report`` less the keys ``golden`` lacks whose value is null: a field added since the golden was
    written (a new breakdown segment) that an old trace has no data for. Every number must still match."""
    if isinstance(report, dict) and isinstance(golden, dict):
        return {k: _without_new_nulls(v, golden.get(k)) for k, v in report.items() if k in golden or v is not None}
    if isinstance(report, list) and isinstance(golden, list) and len(report) == len(golden):
        return [_without_new_nulls(r, g) for r, g in zip(report, golden)]
    return report


@pytest.mark.parametrize("golden", TRACES)
def test_json_report_is_unchanged(golden):
    expected = json.loads((GOLDEN / golden).read_text())
    assert _without_new_nulls(json.loads(_report(golden, "--json")), expected) == expected


@pytest.mark.parametrize("golden", TRACES)
def test_terminal_report_is_unchanged(golden):
    expected = (GOLDEN / golden.replace(".report.json", ".report.txt")).read_text()
    assert _report(golden).splitlines() == expected.splitlines()
