"""The fault modes of the scripted LLM server, seen through the real openai client and voicetrace's
timed stream: a stall ends the call with LLMStalled after the stall timeout, and every fault ends
the call with its error recorded (issue 8). The pipeline-level runs are in
tests/integration/test_run_faults.py."""

from __future__ import annotations

import asyncio
import socket
import time

import openai
import pytest

from voicetrace.capture.llm_stream import LLMCall, LLMStalled, TimedStream
from voicetrace.servers.faulty_llm import Fault, FaultyLLMServer, user_turn
from voicetrace.servers.scripted_llm import Reply, Script

MESSAGES = [{"role": "user", "content": "where is my claim"}]


class Sink:
    def __init__(self) -> None:
        self.ended: list[LLMCall] = []

    def begin_llm_call(self, prepare_ns: int) -> LLMCall:
        return LLMCall(request_ns=prepare_ns)

    def llm_request_sent(self, call: LLMCall, request_ns: int) -> None:
        call.request_ns = request_ns

    def end_llm_call(self, call: LLMCall) -> None:
        self.ended.append(call)


async def _stream(server, stall_timeout_s: float | None = None):
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0, timeout=30)
    call, sink = LLMCall(request_ns=time.monotonic_ns()), Sink()
    error = None
    try:
        raw = await client.chat.completions.create(model="scripted", messages=MESSAGES, stream=True)
        stream = TimedStream(raw, call, sink, stall_timeout_s)
        try:
            async for _ in stream:
                pass
        finally:
            await stream.close()
    except Exception as exc:  # noqa: BLE001 - the test looks at which
        error = exc
    finally:
        await client.close()
    return call, sink, error


@pytest.fixture
def server_with():
    servers = []

    def start(fault: Fault | None) -> FaultyLLMServer:
        server = FaultyLLMServer(Script([Reply("One two three four five.", ttft_ms=10, itl_ms=5)]),
                                 {1: fault} if fault else {}).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_no_fault_streams_the_scripted_reply(server_with):
    call, sink, error = asyncio.run(_stream(server_with(None), stall_timeout_s=2))
    assert error is None and call.text == "One two three four five." and sink.ended == [call]


def test_stall_mid_stream_ends_the_call_after_the_stall_timeout(server_with):
    server = server_with(Fault("stall", tokens_before=2))
    started = time.monotonic()
    call, sink, error = asyncio.run(_stream(server, stall_timeout_s=0.5))
    took_s = time.monotonic() - started
    assert isinstance(error, LLMStalled) and "no chunk for 0.5 s" in str(error)
    assert 0.5 <= took_s < 5
    assert call.text == "One two" and call.error.startswith("LLMStalled") and sink.ended == [call]
    deadline = time.monotonic() + 5
    while server.served[0].client_gone_ns is None and time.monotonic() < deadline:
        time.sleep(0.05)  # polling the server's view of the connection
    assert server.served[0].client_gone_ns is not None  # the connection was closed, not left hanging


@pytest.mark.parametrize("kind, exc_type", [("http_500", openai.InternalServerError),
                                            ("drop", openai.APIConnectionError)])
def test_error_answers_raise_from_the_client(server_with, kind, exc_type):
    call, _, error = asyncio.run(_stream(server_with(Fault(kind)), stall_timeout_s=2))
    assert isinstance(error, exc_type), error


def test_malformed_sse_fails_the_stream_after_the_good_tokens(server_with):
    call, sink, error = asyncio.run(_stream(server_with(Fault("malformed_sse", tokens_before=3)), stall_timeout_s=2))
    assert error is not None and not isinstance(error, LLMStalled)
    assert call.text == "One two three" and call.error and sink.ended == [call]


def test_refuse_stops_listening(server_with):
    server = server_with(Fault("refuse"))
    _, _, first = asyncio.run(_stream(server, stall_timeout_s=2))
    assert isinstance(first, openai.APIConnectionError)
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", server.port)) != 0  # refused from now on
    _, _, second = asyncio.run(_stream(server, stall_timeout_s=2))
    assert isinstance(second, openai.APIConnectionError)


def test_faults_are_chosen_per_caller_turn():
    assert user_turn({"messages": [{"role": "system"}, {"role": "user"}, {"role": "assistant"}, {"role": "user"}]}) == 2
    assert user_turn({"messages": "junk"}) == 0
    with pytest.raises(ValueError, match="unknown fault"):
        Fault("explode")
