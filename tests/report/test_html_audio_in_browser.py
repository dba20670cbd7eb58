"""The report's call audio in real headless Chromium, on a real run of the claim_status sample.

The run folder is rebuilt from tests/data/claim_status_run (a real run's trace and its call.wav kept as
Ogg/Opus; see make_claim_status_run.py). Expected times come from the raw trace JSON and the sample's
own speech-edge truth, not from the page's code.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import orjson
import pytest
import soundfile as sf

from tests.conftest import SAMPLES, VOICETRACE
from tests.report.test_html_in_browser import ARTIFACTS, VIEWPORT, browser  # noqa: F401  (the fixture)

DATA = Path(__file__).resolve().parents[1] / "data" / "claim_status_run"
AUDIO = "document.querySelector('audio.call-audio:not([hidden])')"
WF = "document.getElementById('waterfall')"
PLAYHEAD_X = "[...document.querySelectorAll('#waterfall .shapelayer path')].pop().getBoundingClientRect().x"


def _spans(trace: Path) -> list[dict]:
    return [s for line in trace.read_bytes().splitlines() if line.strip()
            for r in orjson.loads(line)["resourceSpans"] for scope in r["scopeSpans"] for s in scope["spans"]]


def _turn_times(trace: Path) -> list[dict]:
    """Per turn, in call order, seconds from the conversation's start: caller speech end, bot speech start."""
    spans = _spans(trace)
    (conv,) = [s for s in spans if s["name"] == "conversation"]
    t0 = int(conv["startTimeUnixNano"])
    turns = sorted((s for s in spans if s["name"] == "turn"), key=lambda s: int(s["startTimeUnixNano"]))
    out = []
    for turn in turns:
        kids = {s["name"]: s for s in spans if s.get("parentSpanId") == turn["spanId"]}
        out.append({"speech_end_s": (int(kids["user.speech"]["endTimeUnixNano"]) - t0) / 1e9,
                    "bot_start_s": (int(kids["bot.speech"]["startTimeUnixNano"]) - t0) / 1e9})
    return out


@pytest.fixture
def run_folder(tmp_path) -> Path:
    folder = tmp_path / "claim_status"
    folder.mkdir()
    shutil.copyfile(DATA / "trace.jsonl", folder / "trace.jsonl")
    audio, rate = sf.read(str(DATA / "call.ogg"), dtype="int16")
    sf.write(str(folder / "call.wav"), audio, rate, subtype="PCM_16")
    return folder


def test_the_fixture_trace_and_audio_share_the_calls_timeline(run_folder):
    """The trace's speech ends sit where the sample's truth says the caller stopped (the VAD's ~110 ms
    hangover at most 200 ms late), and call.wav's caller channel is voiced before each and quiet after."""
    truth = [line["speech_end_s"] for line in json.loads((SAMPLES / "claim_status.json").read_text())["lines"]]
    times = _turn_times(run_folder / "trace.jsonl")
    assert len(times) == len(truth) == 4
    audio, rate = sf.read(str(run_folder / "call.wav"), dtype="float32")
    for t, end in zip(times, truth):
        assert 0 <= t["speech_end_s"] - end <= 0.2, (t, end)
        before = audio[int((end - 0.3) * rate):int((end - 0.05) * rate), 0]
        after = audio[int((end + 0.05) * rate):int((end + 0.3) * rate), 0]
        assert 20 * np.log10(np.sqrt(np.mean(before ** 2))) > -40 > 20 * np.log10(np.sqrt(np.mean(after ** 2)) + 1e-9)


def test_the_player_loads_seeks_and_moves_its_playhead_over_the_waterfall(browser, run_folder, tmp_path, cli_env):  # noqa: F811
    page_path = tmp_path / "report.html"
    done = subprocess.run([str(VOICETRACE), "report", str(run_folder), "-o", str(page_path)], capture_output=True,
                          text=True, timeout=120, env=cli_env)
    assert done.returncode == 0, done.stderr
    assert page_path.stat().st_size < 5_000_000 + 400_000  # plotly.js (~4.8 MB) and ~47 s of call
    call_s = sf.info(str(run_folder / "call.wav")).duration
    times = _turn_times(run_folder / "trace.jsonl")

    errors = []
    page = browser.new_page(viewport=VIEWPORT)
    page.on("pageerror", lambda error: errors.append(f"exception: {error}"))
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type in ("error", "assert") else None)
    page.on("requestfailed", lambda request: errors.append(f"failed load: {request.url}"))
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(page_path.resolve().as_uri(), wait_until="load")
        page.wait_for_selector("body[data-ready]", state="attached", timeout=60_000)
        page.wait_for_function(f"{AUDIO} && {AUDIO}.readyState >= 1", timeout=30_000)
        assert page.evaluate(f"{AUDIO}.src.slice(0, 22)") == "data:audio/ogg;base64,"
        assert abs(page.evaluate(f"{AUDIO}.duration") - call_s) < 0.02  # Chromium adds Opus's 6.5 ms pre-skip

        # Pick the first turn: the player is cued at its caller speech end, the playhead at 0 ms.
        page.evaluate("(() => { var s = document.getElementById('turn-select'); s.value = String("
                      "[...s.options].findIndex(o => / turn 1 /.test(o.textContent))); s.dispatchEvent(new Event('change')); })()")
        page.wait_for_function(f"{WF}.layout.title.text.indexOf('turn 1:') >= 0 && Math.abs(+{WF}.getAttribute('data-playhead-ms')) < 1")
        assert abs(page.evaluate(f"{AUDIO}.currentTime") - times[0]["speech_end_s"]) < 0.001
        playhead_x = page.evaluate(PLAYHEAD_X)

        # Click the bot.speech bar: the audio seeks to the bot's start, the playhead moves onto the bar's left edge.
        index = page.evaluate(f"{WF}.data[0].y.findIndex(y => y.trim() === 'bot.speech')")
        bar = page.locator("#waterfall .barlayer .point path").nth(index).bounding_box()
        page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
        page.wait_for_function(f"{WF}.querySelector('.hoverlayer .hovertext') !== null")  # plotly has the point
        page.mouse.down(); page.mouse.up()
        bot_ms = (times[0]["bot_start_s"] - times[0]["speech_end_s"]) * 1000
        page.wait_for_function(f"Math.abs(+{WF}.getAttribute('data-playhead-ms') - {bot_ms}) < 1")
        assert abs(page.evaluate(f"{AUDIO}.currentTime") - times[0]["bot_start_s"]) < 0.001
        moved_x = page.evaluate(PLAYHEAD_X)
        assert moved_x - playhead_x > 50 and abs(moved_x - bar["x"]) <= 2, (playhead_x, moved_x, bar)

        # Play from the caller's speech end: the audio runs and the playhead follows it.
        page.click("#play-turn")
        page.wait_for_function(f"!{AUDIO}.paused && +{WF}.getAttribute('data-playhead-ms') > 300", timeout=10_000)
        page.evaluate(f"{AUDIO}.pause()")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report-audio.png"), full_page=True)
    finally:
        page.close()
    assert errors == []
    assert all(url.startswith(("file:", "data:")) for url in requests), requests  # nothing from the network
