"""Socket-level stamps (capture.wire): SSE framing over arbitrary reads, and on a real local HTTP
stream the order request handed over < body written < each chunk read ≤ each chunk delivered."""

from __future__ import annotations

import asyncio

from pipecat.services.openai.llm import OpenAILLMService

from voicetrace import semconv as sc
from voicetrace.capture.llm_spans import call_attributes
from voicetrace.capture.content import ContentPolicy
from voicetrace.capture.llm_stream import LLMInstrumentor, instrument_openai_llm
from voicetrace.capture.wire import WireTimes
from voicetrace.servers.scripted_llm import Reply, Script, ScriptedLLMServer

from tests.unit.test_llm_instrumentor import Sink, TickClock, _drain


def test_events_are_stamped_by_the_read_that_completes_them():
    times = WireTimes(lambda: 0)
    times.feed(b'data: {"a": 1}\n\ndata: {"b"', 10)  # one whole event, half of the next
    times.feed(b': 2}\r\n\r\n: keep-alive comment\n\n', 20)  # CRLF framing; a comment is no event
    times.feed(b'data: {"c": 3}\n\ndata: [DONE]\n\n', 30)  # [DONE] is not a chunk the SDK yields
    assert times.event_ns == [10, 20, 30]


def test_a_real_stream_is_stamped_at_the_socket_before_the_sdk_delivers_it():
    sink, clock = Sink(), TickClock()
    with ScriptedLLMServer(Script([Reply("One two three", ttft_ms=20, itl_ms=5)])) as server:
        service = OpenAILLMService(api_key="x", base_url=server.base_url, settings=OpenAILLMService.Settings(model="m"))
        instrument_openai_llm(service, sink, clock=clock)
        asyncio.run(_drain(service))
    (call,) = sink.calls
    assert call.request_ns < call.wire.request_ns < call.token_wire_ns[0]
    assert len(call.token_wire_ns) == len(call.token_times_ns) == 3
    assert all(r < t for r, t in zip(call.token_wire_ns, call.token_times_ns))
    assert call.token_wire_ns == sorted(call.token_wire_ns)
    attrs = call_attributes(call, ContentPolicy())
    assert attrs[sc.ATTR_LLM_TTFT_WIRE_MS] == (call.token_wire_ns[0] - call.wire.request_ns) / 1e6
    assert attrs[sc.ATTR_LLM_DELIVERY_LAG_MS] == (call.token_times_ns[0] - call.token_wire_ns[0]) / 1e6 > 0


def test_uninstrument_removes_the_response_hook_too():
    service = OpenAILLMService(api_key="x", base_url="http://127.0.0.1:9/v1", settings=OpenAILLMService.Settings(model="m"))
    hooks = service._client._client.event_hooks
    instrumentor = LLMInstrumentor(Sink()).instrument(service)
    assert len(hooks["response"]) == 1
    instrumentor.uninstrument()
    assert hooks["response"] == [] and hooks["request"] == []


def test_the_kth_chunk_the_sdk_yields_takes_the_kth_event_s_read_time():
    from types import SimpleNamespace as NS

    from voicetrace.capture.sinks import LLMCall
    from voicetrace.capture.timed_stream import TimedStream

    def chunk(content):
        delta = NS(content=content, tool_calls=None)
        return NS(model_extra={}, usage=None, choices=[NS(finish_reason=None, delta=delta)])

    async def sdk():  # the SDK lags behind the socket: all four events were read before it yields one
        for c in (chunk(""), chunk("One"), chunk(" two"), chunk(" three")):
            yield c

    call = LLMCall(request_ns=0)
    call.wire = WireTimes(lambda: 0)
    call.wire.event_ns = [10, 20, 30, 40]
    stamps = iter(range(100, 200, 10))

    async def drain():
        async for _ in TimedStream(sdk(), call, Sink(), mono_ns=lambda: next(stamps)):
            pass

    asyncio.run(drain())
    assert call.token_wire_ns == [20, 30, 40] and call.token_times_ns == [110, 120, 130]
