"""The HTML report in real headless Chromium, opened from a file like a user would."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from voicetrace.report import build_report
from voicetrace.render.html import build_page
from voicetrace.traces.files import read_trace_files

from tests.browser import Chromium, chromium_path

ARTIFACTS = Path(os.environ.get("VOICETRACE_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "build" / "test-artifacts"))

CHECKS = {
    "waterfall_bars": "document.querySelectorAll('#waterfall .barlayer .point').length",
    "token_ticks": "document.querySelectorAll('#waterfall .scatterlayer .point').length",
    "breakdown_bars": "document.querySelectorAll('#fig-breakdown .barlayer .point').length",
    "turn_options": "document.querySelectorAll('#turn-select option').length",
    "pwned": "typeof window.__pwned",
    "table_text": "(document.querySelector('table.turns') || {innerText: ''}).innerText",
    "table_rows": "document.querySelectorAll('table.turns tbody tr').length",
    "select_works": """(function () {
        var sel = document.getElementById('turn-select');
        if (!sel || sel.options.length < 2) return 'n/a';
        sel.value = '1'; sel.dispatchEvent(new Event('change'));
        return document.querySelector('#waterfall .gtitle').textContent;
    })()""",
}


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        pytest.fail("chromium is not installed: run scripts/install-test-deps.sh (make test does)")
    with Chromium() as chromium:
        yield chromium


def open_report(browser, traces, which, tmp_path):
    report = build_report(read_trace_files([traces[which]]))
    page = tmp_path / f"{which}.html"
    page.write_text(build_page(report), encoding="utf-8")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"report-{which}.png"
    return report, browser.open(page, CHECKS, screenshot=shot)


def test_many_call_report_draws_without_errors(browser, traces, tmp_path):
    report, page = open_report(browser, traces, "many", tmp_path)
    assert page.errors == []
    assert page.checks["waterfall_bars"] >= 7  # turn + six stage spans
    assert page.checks["token_ticks"] > 0
    assert page.checks["breakdown_bars"] >= len(report.turns)
    assert page.checks["turn_options"] == len(report.turns)
    assert "turn" in page.checks["select_works"]
    assert page.screenshot.stat().st_size > 10_000


def test_transcript_script_shows_as_text_and_does_not_run(browser, traces, tmp_path):
    from tests.report.conftest import XSS

    _, page = open_report(browser, traces, "one", tmp_path)
    assert page.errors == []
    assert page.checks["pwned"] == "undefined"
    assert "<script>window.__pwned = 1</script>" in page.checks["table_text"]
    assert page.checks["waterfall_bars"] >= 7 + 3  # stages plus queue, prefill, tool
    assert XSS[:20] in page.checks["table_text"]


def test_empty_report_opens_without_errors(browser, traces, tmp_path):
    _, page = open_report(browser, traces, "empty", tmp_path)
    assert page.errors == []
    assert page.checks["table_rows"] == 0 and page.checks["turn_options"] == 0


def test_a_broken_page_is_caught(browser, tmp_path):
    """The harness itself: a page that throws must be reported (guards against a silent pass)."""
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><body><script>document.body.setAttribute('data-ready', '1');"
                    "console.error('boom'); undefinedFn();</script></body>")
    result = browser.open(page, {})
    assert any("boom" in e for e in result.errors)
    assert any("undefinedFn" in e for e in result.errors)
