"""Issue 8, faults while running, on the real pipeline (WebRTC VAD + smart-turn, faster-whisper,
Piper) with short calls cut from the sample calls:

- `voicetrace run --llm-url` against the scripted server with fault modes: a 500, a stall mid-stream
  (the stall timeout ends the turn's LLM call with an error span), malformed SSE, then a normal turn;
  live export to an OTLP endpoint nobody listens on. The run goes on, exits 0, loses no span.
- TTS raises, a tool raises, a tool times out (in-process run, the services patched to fail).
- The embedded llama-server is killed mid-call: exit 4, one line, spans so far kept, nothing left running.
- An all-silence call: no turns, said by the run and by `report`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest
import soundfile as sf

from voicetrace import semconv as sc
from voicetrace.run.folder import RunFolder
from voicetrace.servers.faulty_llm import Fault, FaultyLLMServer
from voicetrace.servers.scripted_llm import Reply, Script
from voicetrace.traces.files import read_trace_files

from tests.conftest import SAMPLES, VOICETRACE, wait_for

pytestmark = pytest.mark.integration
ANSWER = "Thanks. Your claim is approved and the payment goes out this week."
ERROR = 2  # OTLP status code


def make_call(path: Path, lines: list[tuple[str, int]], gap_s: float) -> Path:
    """A call of sample lines (call name, line index) with ``gap_s`` of silence after each."""
    rate = 16000
    parts = [np.zeros(int(0.5 * rate), np.int16)]
    for name, index in lines:
        meta = json.loads((SAMPLES / f"{name}.json").read_text())["lines"][index]
        audio, sr = sf.read(SAMPLES / f"{name}.wav", dtype="int16")
        assert sr == rate
        parts.append(audio[int((meta["speech_start_s"] - 0.2) * rate):int((meta["speech_end_s"] + 0.2) * rate)])
        parts.append(np.zeros(int(gap_s * rate), np.int16))
    sf.write(path, np.concatenate(parts), rate, subtype="PCM_16")
    return path


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def raw_status_message(trace: Path, span_id: str) -> str:
    """A span's status message, read from the raw OTLP JSON."""
    for line in trace.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span["spanId"] == span_id:
                        return span.get("status", {}).get("message", "")
    raise AssertionError(f"no span {span_id}")


def by_turn(spans):
    """{turn number: {stage name: [span rows]}}."""
    turns = spans[spans["name"] == sc.SPAN_TURN]
    out = {}
    for turn in turns.itertuples():
        kids = spans[spans["parent_span_id"] == turn.span_id]
        out[turn.attributes[sc.ATTR_TURN_NUMBER]] = {name: list(rows.itertuples()) for name, rows in kids.groupby("name")}
    return out


# --- LLM faults through `voicetrace run --llm-url`, Jaeger unreachable ------------------------

@pytest.fixture(scope="module")
def llm_fault_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("llm-faults")
    call = make_call(out / "four_turns.wav", [("claim_status", 0), ("policy_question", 0), ("claim_status", 2),
                                              ("policy_question", 2)], gap_s=3.5)
    faults = {1: Fault("http_500"), 2: Fault("stall", tokens_before=2), 3: Fault("malformed_sse", tokens_before=2)}
    with FaultyLLMServer(Script([Reply(ANSWER, ttft_ms=50, itl_ms=10)]), faults) as server:
        result = subprocess.run(
            [str(VOICETRACE), "run", str(call), "--out", str(out), "--run-id", "faults", "--llm-url", server.base_url,
             "--model", "scripted", "--tools", "off", "--llm-timeout-s", "1.5",
             "--otlp", f"http://127.0.0.1:{closed_port()}"],
            capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="140"),
        )
        served = list(server.served)
    return {"result": result, "run": out / "faults", "served": served}


def test_the_run_goes_on_through_llm_faults_and_exits_0(llm_fault_run):
    result = llm_fault_run["result"]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr + result.stdout
    info = RunFolder(llm_fault_run["run"]).read_info()
    assert info["status"] == "complete"
    assert info["llm"] == {"server": "external", "base_url": info["pipeline"]["llm_base_url"], "model": "scripted",
                           "llama_cpp_timings": False, "stall_timeout_s": 1.5}
    kinds = {kind for _, kind in ((s.turn, s.kind) for s in llm_fault_run["served"])}
    assert kinds == {"http_500", "stall", "malformed_sse"}


def test_every_fault_turn_has_an_error_llm_span_and_the_next_turn_answers(llm_fault_run):
    tables = read_trace_files([RunFolder(llm_fault_run["run"]).trace])
    assert tables.skipped == 0
    turns = by_turn(tables.spans)
    assert sorted(turns) == [1, 2, 3, 4]
    for number in (1, 2, 3):
        llm = turns[number][sc.SPAN_LLM]
        assert [s.status_code for s in llm] == [ERROR] * len(llm), number
    # The stall: two tokens arrive, then nothing; the stall timeout ends the call, not before 1.5 s of
    # silence (no upper bound: a loaded machine may fire the timer late; the status says why it ended).
    stalled = turns[2][sc.SPAN_LLM][0]
    ticks = tables.events[(tables.events.span_id == stalled.span_id) & (tables.events.name == sc.EVENT_TOKEN)]
    assert len(ticks) == 2
    assert stalled.end_ns - ticks.time_ns.max() >= 1.5e9
    assert "stalled" in raw_status_message(llm_fault_run["run"] / "trace.jsonl", stalled.span_id)
    answered = turns[4]
    assert [s.status_code for s in answered[sc.SPAN_LLM]] == [0]
    assert answered[sc.SPAN_LLM][0].attributes[sc.ATTR_GENAI_OUTPUT_TOKENS] == len(ANSWER.split())
    assert sc.SPAN_BOT_SPEECH in answered and sc.SPAN_TTS in answered
    assert (tables.spans["name"] == sc.SPAN_CONVERSATION).sum() == 1


def raw_span_count(trace: Path) -> int:
    """Spans in an OTLP JSON-lines file, counted from the raw JSON (not through voicetrace's reader)."""
    return sum(len(scope.get("spans", [])) for line in trace.read_text().splitlines() if line.strip()
               for resource in json.loads(line)["resourceSpans"] for scope in resource.get("scopeSpans", []))


def test_unreachable_otlp_endpoint_warns_and_loses_nothing_from_the_file(llm_fault_run):
    """Nobody listens on the OTLP port: not one span is counted as sent, every span the file got is
    counted as undelivered (the live exporter sees the same spans), the warning gives that count, and
    the file is complete."""
    result = llm_fault_run["result"]
    info = json.loads((llm_fault_run["run"] / "run.json").read_text())
    in_file = raw_span_count(llm_fault_run["run"] / "trace.jsonl")
    assert in_file > 0 and info["spans_written"] == in_file
    assert info["otlp"]["spans_sent"] == 0
    assert info["otlp"]["spans_undelivered"] == in_file
    assert f"{in_file} spans not delivered" in " ".join(result.stderr.split()), result.stderr[-2000:]


def test_content_is_not_captured_by_default(llm_fault_run):
    spans = read_trace_files([RunFolder(llm_fault_run["run"]).trace]).spans
    for attrs in spans["attributes"]:
        assert sc.ATTR_ASR_TRANSCRIPT not in attrs and sc.ATTR_LLM_OUTPUT not in attrs
        assert sc.ATTR_TOOL_ARGUMENTS not in attrs
    assert not any(ANSWER.split()[2] in json.dumps(a) for a in spans["attributes"])


# --- TTS raises, a tool raises, a tool times out (in-process) ---------------------------------

def test_tts_and_tool_failures_are_error_spans_and_the_run_goes_on(tmp_path, monkeypatch):
    from pipecat.services.piper.tts import PiperTTSService

    import voicetrace.tools.runner as tool_runner
    from voicetrace.run import RunOptions, run_call
    from voicetrace.tools.insurance import InsuranceTools

    call = make_call(tmp_path / "two_turns.wav", [("claim_status", 0), ("claim_status", 1)], gap_s=4.0)
    original_run_tts = PiperTTSService.run_tts
    calls = {"tts": 0}

    async def failing_first_run_tts(self, text, context_id):
        calls["tts"] += 1
        if calls["tts"] == 1:
            raise RuntimeError("scripted TTS failure")
        async for frame in original_run_tts(self, text, context_id):
            yield frame

    def slow_lookup(self, *args, **kwargs):
        time.sleep(3.0)  # far past the tool timeout below: room for a loaded machine's late timer
        return {"policy": "late"}

    def broken_claim_status(self, *args, **kwargs):
        raise RuntimeError("claims database is on fire")

    monkeypatch.setattr(PiperTTSService, "run_tts", failing_first_run_tts)
    monkeypatch.setattr(tool_runner, "TOOL_TIMEOUT_S", 0.3)
    monkeypatch.setattr(InsuranceTools, "lookup_policy", slow_lookup)
    monkeypatch.setattr(InsuranceTools, "get_claim_status", broken_claim_status)
    with FaultyLLMServer(Script([Reply(ANSWER, ttft_ms=50, itl_ms=10)])) as server:
        result = run_call(RunOptions(call_path=call, out_dir=tmp_path, llm_url=server.base_url, llm_model="scripted",
                                     tools="intent", tools_db=tmp_path / "claims.sqlite", run_id="svc"))
    assert not result.interrupted and result.turns == 2
    tables = read_trace_files([result.trace_path])
    assert tables.skipped == 0 and len(tables.spans) == result.spans_written
    spans = tables.spans
    lookup = spans[spans["name"] == "tool.lookup_policy"].iloc[0]
    assert lookup.status_code == ERROR and lookup.attributes[sc.ATTR_ERROR_TYPE] == "TimeoutError"
    assert 0.29e9 <= lookup.end_ns - lookup.start_ns < 2.5e9  # ended at the timeout, not when the tool returned
    turns = by_turn(spans)
    tts_first = turns[1][sc.SPAN_TTS]
    assert any(s.status_code == ERROR for s in tts_first), tts_first
    claim = turns[2]["tool.get_claim_status"][0]
    assert claim.status_code == ERROR and claim.attributes[sc.ATTR_ERROR_TYPE] == "RuntimeError"
    assert [s.status_code for s in turns[2][sc.SPAN_LLM]] == [0]  # the LLM still answered
    assert sc.SPAN_BOT_SPEECH in turns[2]  # and the caller heard it
    assert RunFolder(tmp_path / "svc").read_info()["status"] == "complete"


# --- the embedded llama-server dies mid-call --------------------------------------------------

def _pids_listening_on(port: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"llama-server") and str(port).encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def _listening_addresses(port: int) -> list[str]:
    """Local addresses (hex, as the kernel writes them) with a listening TCP socket on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.append(address)
    return found


def test_embedded_llama_server_dying_mid_call_is_detected_said_and_cleaned_up(tmp_path):
    call = make_call(tmp_path / "two_turns.wav", [("claim_status", 0), ("claim_status", 2)], gap_s=6.0)
    proc = subprocess.Popen(
        [str(VOICETRACE), "run", str(call), "--out", str(tmp_path), "--run-id", "dies", "--tools", "off"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, COLUMNS="140"),
    )
    run_dir = tmp_path / "dies"
    trace = RunFolder(run_dir).trace
    try:
        wait_for(lambda: trace.exists() and '"name":"turn"' in trace.read_text(), 150, "the first turn's spans")
        port = urlparse(RunFolder(run_dir).read_info()["pipeline"]["llm_base_url"]).port
        pids = _pids_listening_on(port)
        assert len(pids) == 1
        assert _listening_addresses(port) == ["0100007F"]  # the real llama-server: 127.0.0.1 only
        os.kill(pids[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, stderr[-2000:]
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "llama-server exited mid-call (killed by SIGKILL)" in errors[0], stderr[-2000:]
    tables = read_trace_files([trace])
    assert tables.skipped == 0
    assert (tables.spans["name"] == sc.SPAN_TURN).sum() >= 1
    assert (tables.spans["name"] == sc.SPAN_CONVERSATION).sum() == 1  # closed when the run stopped
    info = RunFolder(run_dir).read_info()
    assert info["status"] == "failed" and "llama-server exited" in info["error"]
    assert not Path(f"/proc/{pids[0]}").exists()  # reaped, not a zombie
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0


# --- an all-silence call ----------------------------------------------------------------------

def test_all_silence_call_has_no_turns_and_says_so(tmp_path, cli_env):
    call = tmp_path / "silence.wav"
    sf.write(call, np.zeros(16000 * 3, np.int16), 16000, subtype="PCM_16")
    with FaultyLLMServer() as server:
        result = subprocess.run(
            [str(VOICETRACE), "run", str(call), "--out", str(tmp_path), "--run-id", "quiet", "--llm-url", server.base_url,
             "--model", "scripted"], capture_output=True, text=True, timeout=180, env=cli_env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "all silence: expect no turns" in result.stderr
    assert "no turns in the trace" in result.stdout
    tables = read_trace_files([RunFolder(tmp_path / "quiet").trace])
    # the call and its start; integration-time spans (loop stalls, queue waits) may sit beside them
    names = [n for n in tables.spans["name"] if n not in (sc.SPAN_LOOP_BLOCKED, sc.SPAN_QUEUE_WAIT)]
    assert sorted(names) == [sc.SPAN_CONVERSATION, "tool.lookup_policy"]
    report = subprocess.run([str(VOICETRACE), "report", str(tmp_path / "quiet"), "--json"], capture_output=True,
                            text=True, timeout=120, env=cli_env)
    assert report.returncode == 0 and json.loads(report.stdout)["turns"] == []
