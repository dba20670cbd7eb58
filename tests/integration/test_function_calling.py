"""The function-calling path and client-side LLM timing, with a real local scripted LLM server.

The server streams OpenAI-format chunks with an injected time to first token and gaps, answers
the address-change turn with a tool call, and records every request's headers.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess

import pytest

from voicetrace import semconv as sc
from voicetrace.servers.scripted_llm import Reply, Script, ScriptedLLMServer
from voicetrace.traces.files import read_trace_files

from tests.conftest import SAMPLES, VOICETRACE

pytestmark = pytest.mark.integration
MS = 1_000_000
TTFT_MS, ITL_MS = 150.0, 20.0
ANSWER = "Done. Your new address is on file."


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fc")
    script = Script([
        Reply(when_user_contains="address is", tool_call={"name": "update_address", "arguments": {"new_address": "12 Oak Street, Springfield"}}, ttft_ms=80),
        Reply(text=ANSWER, ttft_ms=TTFT_MS, itl_ms=ITL_MS),
    ])
    with ScriptedLLMServer(script) as server:
        result = subprocess.run(
            [str(VOICETRACE), "run", str(SAMPLES / "address_change.wav"), "--out", str(out), "--run-id", "fc",
             "--llm-url", server.base_url, "--model", "scripted", "--tools", "function",
             "--tools-db", str(out / "claims.sqlite"), "--capture-content"],
            capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="140"),
        )
        # The warm-up request (before call time zero) is not part of any turn.
        requests = [r for r in server.requests if "X-Voicetrace-Warmup" not in r.headers]
    assert result.returncode == 0, result.stderr[-3000:]
    return {"tables": read_trace_files([out / "fc" / "trace.jsonl"]), "requests": requests, "db": out / "claims.sqlite"}


def test_tool_turn_shows_asking_call_execution_and_follow_up(run):
    spans = run["tables"].spans
    tool = spans[spans["name"] == "tool.update_address"]
    assert len(tool) == 1
    tool = tool.iloc[0]
    assert tool.attributes[sc.ATTR_TOOL_TRIGGER] == "function_call"
    assert "12 Oak Street" in tool.attributes[sc.ATTR_TOOL_ARGUMENTS]
    siblings = spans[spans["parent_span_id"] == tool.parent_span_id].sort_values("start_ns")
    llm = siblings[siblings["name"] == sc.SPAN_LLM]
    asking = llm[llm["end_ns"] <= tool.start_ns]
    follow_up = llm[llm["start_ns"] >= tool.end_ns]
    assert len(asking) == 1 and len(follow_up) == 1
    assert asking.iloc[0].attributes[sc.ATTR_LLM_TOOL_CALLS] == ["update_address"]
    assert follow_up.iloc[0].attributes[sc.ATTR_LLM_OUTPUT] == ANSWER
    with sqlite3.connect(run["db"]) as db:
        assert db.execute("SELECT new_address FROM address_changes").fetchall() == [("12 Oak Street, Springfield",)]


def test_lookup_policy_runs_once_at_call_start(run):
    spans = run["tables"].spans
    lookup = spans[spans["name"] == "tool.lookup_policy"]
    assert len(lookup) == 1
    conversation = spans[spans["name"] == sc.SPAN_CONVERSATION].iloc[0]
    assert lookup.iloc[0].parent_span_id == conversation.span_id
    first_turn = spans[spans["name"] == sc.SPAN_TURN]["start_ns"].min()
    assert lookup.iloc[0].end_ns < first_turn


def test_every_llm_request_carries_the_traceparent_of_its_llm_span(run):
    spans = run["tables"].spans
    llm = spans[spans["name"] == sc.SPAN_LLM]
    sent = {r.headers.get("traceparent", "")[:52] for r in run["requests"]}  # version-trace-span
    assert len(run["requests"]) == len(llm)
    expected = {f"00-{s.trace_id}-{s.span_id}" for s in llm.itertuples()}
    assert sent == expected
    assert all(int(r.headers["traceparent"][-2:], 16) & 0x01 for r in run["requests"])  # sampled


def test_ttft_and_token_gaps_match_what_the_server_injected(run):
    spans, events = run["tables"].spans, run["tables"].events
    content_calls = [s for s in spans[spans["name"] == sc.SPAN_LLM].itertuples() if s.attributes.get(sc.ATTR_LLM_OUTPUT)]
    assert content_calls
    for call in content_calls:
        # Role-only first chunk does not count: TTFT is request → first content token.
        assert TTFT_MS <= call.attributes[sc.ATTR_LLM_TTFT_MS] < TTFT_MS + 50
        assert call.attributes[sc.ATTR_GENAI_OUTPUT_TOKENS] == len(ANSWER.split())
        ticks = events[(events.span_id == call.span_id) & (events.name == sc.EVENT_TOKEN)].time_ns.sort_values()
        gaps_ms = ticks.diff().dropna() / MS
        assert len(ticks) == len(ANSWER.split())
        assert gaps_ms.median() == pytest.approx(ITL_MS, abs=5)
