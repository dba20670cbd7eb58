"""pipelines/live_agent.py as a team would run it: a real WebSocket between caller and agent.

The agent (embedded llama-server, real models) listens on a free loopback port; pipelines/live_client.py
streams a sample call to it in real time and records what comes back over the socket. The trace the
agent writes must have the product's structure, and the audio the caller heard must be where the trace
says the bot spoke.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

import numpy as np
import pytest
import soundfile as sf

from voicetrace import semconv as sc
from voicetrace.servers.llama import free_loopback_port
from voicetrace.traces.files import read_trace_files

from tests.conftest import ROOT, SAMPLES, VOICETRACE

pytestmark = pytest.mark.integration

CALL = "claim_status"
AGENT, CLIENT = ROOT / "pipelines" / "live_agent.py", ROOT / "pipelines" / "live_client.py"
READY = "voicetrace live agent listening on"


def _lines_of(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


@pytest.fixture(scope="module")
def live_call(tmp_path_factory):
    out = tmp_path_factory.mktemp("live")
    port = free_loopback_port()
    env = dict(os.environ, COLUMNS="140")
    agent = subprocess.Popen(
        [sys.executable, str(AGENT), "--port", str(port), "--out", str(out / "agent"), "--capture-content"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines_of, args=(agent.stdout, lines), daemon=True).start()
    try:
        while True:  # the agent says when it accepts a caller (models loaded and warm)
            line = lines.get(timeout=240)
            assert line is not None, f"agent exited before listening: {agent.wait()} {agent.stderr.read()[-3000:]}"
            if line.startswith(READY):
                break
        client = subprocess.run(
            [sys.executable, str(CLIENT), str(SAMPLES / f"{CALL}.wav"), "--url", f"ws://127.0.0.1:{port}",
             "--out", str(out / "client")],
            capture_output=True, text=True, timeout=240, env=env,
        )
        assert client.returncode == 0, client.stderr[-3000:]
        assert agent.wait(timeout=120) == 0, agent.stderr.read()[-3000:]  # the caller hung up: the agent ends
    finally:
        if agent.poll() is None:  # SIGTERM first: the agent stops its llama-server on the way out
            agent.terminate()
            try:
                agent.wait(timeout=60)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
    agent_out = "".join(iter(lines.get, None))
    return {"trace": out / "agent" / "trace.jsonl", "client": out / "client", "client_stdout": client.stdout,
            "agent_stdout": agent_out, "script": json.loads((SAMPLES / f"{CALL}.json").read_text()), "env": env}


def _turn_stages(spans):
    (conversation,) = spans[spans["name"] == sc.SPAN_CONVERSATION].itertuples()
    turns = spans[spans["name"] == sc.SPAN_TURN]
    assert (turns["parent_span_id"] == conversation.span_id).all()
    out = {}
    for turn in turns.itertuples():
        kids = spans[spans["parent_span_id"] == turn.span_id].sort_values("start_ns")
        out[turn.attributes[sc.ATTR_TURN_NUMBER]] = {name: group for name, group in kids.groupby("name")}
    return conversation, out


def test_trace_has_conversation_turns_and_stages_for_every_line(live_call):
    spans = read_trace_files([live_call["trace"]]).spans
    assert set(spans["service"]) == {"voicetrace-live-agent"}
    _, by_turn = _turn_stages(spans)
    assert sorted(by_turn) == list(range(1, len(live_call["script"]["lines"]) + 1))
    for number, stages in by_turn.items():
        assert set(sc.STAGE_SPANS) <= set(stages), (number, sorted(stages))
    assert f"{len(by_turn)} turns" in live_call["agent_stdout"]


def test_report_on_the_trace_gives_v2v_for_every_turn(live_call):
    result = subprocess.run([str(VOICETRACE), "report", str(live_call["trace"]), "--json"],
                            capture_output=True, text=True, timeout=120, env=live_call["env"])
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["summary"]["turns"] == len(live_call["script"]["lines"])
    assert all(turn["v2v_ms"] is not None and turn["v2v_ms"] > 0 for turn in report["turns"]), report["turns"]
    table = subprocess.run([str(VOICETRACE), "report", str(live_call["trace"])],
                           capture_output=True, text=True, timeout=120, env=live_call["env"])
    assert table.returncode == 0 and "v2v" in table.stdout.lower(), table.stderr[-3000:]


def test_the_bot_audio_came_back_over_the_socket_where_the_trace_says_it_spoke(live_call):
    bot, rate = sf.read(str(live_call["client"] / "bot.wav"), dtype="int16")
    assert rate == 16_000
    spans = read_trace_files([live_call["trace"]]).spans
    conversation, by_turn = _turn_stages(spans)
    for number, stages in by_turn.items():
        assert sc.SPAN_BOT_SPEECH in stages, (number, sorted(stages))
        speech = stages[sc.SPAN_BOT_SPEECH].iloc[0]
        # The client's timeline starts when it connected, the trace's when the agent saw the
        # connection: the same moment on loopback, up to scheduling. Audio must sound inside the span.
        start_s = (speech.start_ns - conversation.start_ns) / 1e9
        end_s = (speech.end_ns - conversation.start_ns) / 1e9
        heard = bot[int(start_s * rate): int(end_s * rate)]
        assert heard.size and np.abs(heard.astype(np.int32)).max() > 1000, (number, start_s, end_s)
    silence_before = bot[: int((spans[spans["name"] == sc.SPAN_BOT_SPEECH].start_ns.min() - conversation.start_ns)
                                / 1e9 * rate) - rate // 2]
    assert silence_before.size == 0 or np.abs(silence_before.astype(np.int32)).max() < 1000  # nothing before the bot spoke
    assert "replies" in live_call["client_stdout"]
