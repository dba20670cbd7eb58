"""Every renderer on an empty trace, a one-turn trace and a many-call set; one set of numbers."""

from __future__ import annotations

import io
import re

import orjson
import pytest

from voicetrace.report import build_report
from voicetrace.render import renderer
from voicetrace.render.html import build_page
from voicetrace.traces.files import read_trace_files

from tests.report.conftest import XSS


@pytest.mark.parametrize("which", ["empty", "one", "many"])
@pytest.mark.parametrize("name", ["terminal", "json", "html"])
def test_every_renderer_on_every_input(traces, which, name):
    report = build_report(read_trace_files([traces[which]]))
    out = io.StringIO()
    renderer(name)(report, out)
    text = out.getvalue()
    assert text
    if name == "json":
        doc = orjson.loads(text)
        assert doc["summary"]["turns"] == len(doc["turns"]) == len(report.turns)
    if name == "html":
        assert text.startswith("<!doctype html>") and "plotly.js v" in text
        ours = re.sub(r"<script>/\*\*\s*\* plotly.js.*?</script>", "", text, flags=re.S)
        assert len(ours) < len(text) - 1_000_000  # plotly.js is inlined
        assert not re.search(r"<[a-z]+\s[^>]*(src|href)=", ours) and "@import" not in ours  # nothing fetched


def test_terminal_and_json_give_the_same_numbers(traces):
    report = build_report(read_trace_files([traces["many"]]))
    doc = orjson.loads(_render("json", report))
    terminal = _render("terminal", report)
    v2v = doc["summary"]["metrics_ms"]["v2v"]
    assert v2v["n"] == 48
    assert f"{v2v['p50']:,.0f}" in terminal and f"{v2v['p95']:,.0f}" in terminal
    assert f"{doc['summary']['metrics_ms']['itl']['p99']:,.0f}" in terminal


def test_transcripts_are_escaped_in_the_html(traces):
    page = build_page(build_report(read_trace_files([traces["one"]])))
    assert XSS not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page  # the table shows it as text
    data = re.search(r'<script type="application/json" id="voicetrace-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data  # embedded JSON can't close its script element


def test_html_aggregates_when_there_are_thousands_of_turns(tmp_path):
    from tests.report.synth import many_calls, write_trace

    path = write_trace(tmp_path / "big.jsonl", many_calls(300, 10))
    report = build_report(read_trace_files([path]))
    page = build_page(report)
    assert report.summary.turns == 3000
    assert page.count('<option') == 0  # options are built in the browser from the data
    data = orjson.loads(re.search(r'id="voicetrace-data">(.*?)</script>', page, re.S).group(1))
    assert len(data["waterfalls"]) == 200
    assert len(data["figures"]["breakdown"]["data"][0]["x"]) == 50  # percentile bins, not 3000 bars
    plotly_bytes = len(re.search(r"<script>(/\*\*\s*\* plotly.js.*?)</script>", page, re.S).group(1))
    assert len(page) - plotly_bytes < 3_000_000


def _render(name, report) -> str:
    out = io.StringIO()
    renderer(name)(report, out)
    return out.getvalue()
