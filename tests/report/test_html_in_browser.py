"""The HTML report in real headless Chromium, opened from a file like a user would.

The page is written by `voicetrace report -o` and driven with Playwright (PyPI, the test extra) on
the system's Chromium (scripts/install-test-deps.sh); no browser is downloaded. Screenshots go to
build/test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from tests.conftest import VOICETRACE

ARTIFACTS = Path(os.environ.get("VOICETRACE_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "build" / "test-artifacts"))
VIEWPORT = {"width": 1400, "height": 1000}

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


@dataclass
class PageResult:
    errors: list = field(default_factory=list)
    """Uncaught exceptions, console errors (Chromium's own error log included) and failed loads."""
    checks: dict = field(default_factory=dict)
    screenshot: Path | None = None


@pytest.fixture(scope="module")
def browser():
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.fail("chromium is not installed: run scripts/install-test-deps.sh (make test does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


def open_page(browser, path: Path, checks: dict[str, str], screenshot: Path | None = None) -> PageResult:
    """Open ``path``, wait for the page's own ready signal (set when every plot is drawn), run the checks."""
    result = PageResult()
    page = browser.new_page(viewport=VIEWPORT)
    page.on("pageerror", lambda error: result.errors.append(f"exception: {error}"))
    page.on("console", lambda message: result.errors.append(f"console.error: {message.text}")
            if message.type in ("error", "assert") else None)
    page.on("requestfailed", lambda request: result.errors.append(f"failed load: {request.url}"))
    try:
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.wait_for_selector("body[data-ready]", state="attached", timeout=60_000)
        result.checks = {name: page.evaluate(expression) for name, expression in checks.items()}
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=True)
            result.screenshot = screenshot
    finally:
        page.close()
    return result


def turn_spans(trace: Path) -> int:
    """Turn spans in an OTLP JSON-lines file, counted from the raw JSON."""
    return sum(span["name"] == "turn" for line in trace.read_bytes().splitlines() if line.strip()
               for resource in orjson.loads(line)["resourceSpans"] for scope in resource["scopeSpans"]
               for span in scope["spans"])


def open_report(browser, traces, which, tmp_path, cli_env) -> PageResult:
    page = tmp_path / f"{which}.html"
    done = subprocess.run([str(VOICETRACE), "report", str(traces[which]), "-o", str(page)], capture_output=True,
                          text=True, timeout=120, env=cli_env)
    assert done.returncode == 0, done.stderr
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return open_page(browser, page, CHECKS, screenshot=ARTIFACTS / f"report-{which}.png")


def test_many_call_report_draws_without_errors(browser, traces, tmp_path, cli_env):
    page = open_report(browser, traces, "many", tmp_path, cli_env)
    turns = turn_spans(traces["many"])
    assert page.errors == []
    assert page.checks["waterfall_bars"] >= 7  # turn + six stage spans
    assert page.checks["token_ticks"] > 0
    assert page.checks["breakdown_bars"] >= turns
    assert page.checks["turn_options"] == turns == 48
    assert "turn" in page.checks["select_works"]
    assert page.screenshot.stat().st_size > 10_000


def test_transcript_script_shows_as_text_and_does_not_run(browser, traces, tmp_path, cli_env):
    from tests.report.conftest import XSS

    page = open_report(browser, traces, "one", tmp_path, cli_env)
    assert page.errors == []
    assert page.checks["pwned"] == "undefined"
    assert "<script>window.__pwned = 1</script>" in page.checks["table_text"]
    assert page.checks["waterfall_bars"] >= 7 + 3  # stages plus queue, prefill, tool
    assert XSS[:20] in page.checks["table_text"]


def test_empty_report_opens_without_errors(browser, traces, tmp_path, cli_env):
    page = open_report(browser, traces, "empty", tmp_path, cli_env)
    assert page.errors == []
    assert page.checks["table_rows"] == 0 and page.checks["turn_options"] == 0


def test_a_broken_page_is_caught(browser, tmp_path):
    """The harness itself: a page that throws, logs an error or fails a load must be reported
    (guards against a silent pass)."""
    page = tmp_path / "broken.html"
    page.write_text("<!doctype html><body><img src='missing.png'><script>document.body.setAttribute('data-ready', '1');"
                    "console.error('boom'); undefinedFn();</script></body>")
    result = open_page(browser, page, {})
    assert any("boom" in e for e in result.errors), result.errors
    assert any("undefinedFn" in e for e in result.errors), result.errors
    assert any(e.startswith("failed load:") and "missing.png" in e for e in result.errors), result.errors
