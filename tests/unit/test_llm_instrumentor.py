"""LLMInstrumentor on a real pipecat OpenAI service and on stand-ins: the httpx hook stamps the
request and sets its traceparent, chunks are stamped as they arrive, the fallback without httpx
hooks, a stall before the response, uninstrument, the pipecat version guard; and the llm span
it leads to (owner turn, CLIENT kind, server host/port, error.type, redacted error text)."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from pipecat.frames.frames import EndFrame, StartFrame, VADUserStartedSpeakingFrame
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.services.openai.llm import OpenAILLMService

from voicetrace import semconv as sc
from voicetrace.capture import llm_stream
from voicetrace.capture.llm_stream import LLMInstrumentor, LLMStalled, instrument_openai_llm
from voicetrace.capture.sinks import LLMCall
from voicetrace.clock import RunClock
from voicetrace.servers.scripted_llm import Reply, Script, ScriptedLLMServer

from tests.unit.test_observer import MS, Harness
from tests.unit.test_observer_depth import speak_and_commit

CONTEXT = LLMContext(messages=[{"role": "user", "content": "where is my claim"}])


class TickClock(RunClock):
    """Each reading is one tick later: the order of stamps is visible in their values."""

    def __init__(self) -> None:
        super().__init__(anchor_wall_ns=0, anchor_mono_ns=0)
        self.ticks = 0

    def mono_ns(self) -> int:
        self.ticks += 1
        return self.ticks


class Sink:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.calls: list[LLMCall] = []

    def begin_llm_call(self, prepare_ns: int) -> LLMCall:
        self.events.append("begin")
        self.calls.append(LLMCall(request_ns=prepare_ns, prepare_ns=prepare_ns))
        return self.calls[-1]

    def llm_request_sent(self, call: LLMCall, request_ns: int) -> str:
        self.events.append("sent")
        call.request_ns = request_ns
        return "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"

    def end_llm_call(self, call: LLMCall) -> None:
        self.events.append("end")


async def _drain(service) -> list:
    stream = await service.get_chat_completions(CONTEXT)
    chunks = [chunk async for chunk in stream]
    await (stream.close() if hasattr(stream, "close") else stream.aclose())
    return chunks


def test_httpx_hook_stamps_the_request_and_the_stream_stamps_each_chunk():
    sink, clock = Sink(), TickClock()
    with ScriptedLLMServer(Script([Reply("One two three", ttft_ms=20, itl_ms=5)])) as server:
        service = OpenAILLMService(api_key="x", base_url=server.base_url, settings=OpenAILLMService.Settings(model="m"))
        instrumentor = instrument_openai_llm(service, sink, clock=clock)
        assert instrumentor.is_instrumented and instrumentor.uses_http_hooks
        asyncio.run(_drain(service))
        (request,) = server.requests
    (call,) = sink.calls
    assert sink.events == ["begin", "sent", "end"]
    assert request.headers["traceparent"] == "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
    assert "traceparent" not in (request.body.get("extra_headers") or {})
    # prepare < request sent < each content chunk < end, all read from the one clock
    assert call.prepare_ns < call.request_ns < call.token_times_ns[0]
    assert call.token_times_ns == sorted(call.token_times_ns) and len(call.token_times_ns) == 3
    assert call.text == "One two three" and call.end_ns > call.token_times_ns[-1]
    assert call.output_tokens == 3 and call.finish_reason == "stop"


class StandIn:
    """An OpenAI-like service without an httpx client: the request is stamped when built."""

    def __init__(self, chunks=(), hang: bool = False) -> None:
        self.params: list[dict] = []
        self._chunks, self._hang = list(chunks), hang

    def build_chat_completion_params(self, params_from_context) -> dict:
        return {"model": "m"}

    async def get_chat_completions(self, context):
        self.params.append(self.build_chat_completion_params(context))
        if self._hang:
            await asyncio.Event().wait()  # a server that never answers

        async def stream():
            for chunk in self._chunks:
                yield chunk

        return stream()


def test_without_httpx_hooks_the_traceparent_goes_in_the_request_params():
    sink, service = Sink(), StandIn()
    instrumentor = LLMInstrumentor(sink, llama_cpp_timings=True, clock=TickClock()).instrument(service)
    assert instrumentor.is_instrumented and not instrumentor.uses_http_hooks
    asyncio.run(_drain(service))
    (params,) = service.params
    assert params["extra_headers"]["traceparent"].startswith("00-0123")
    assert params["extra_body"] == {"timings_per_token": True}
    assert sink.events == ["begin", "sent", "end"]


def test_uninstrument_restores_the_service_and_removes_its_hook():
    service = OpenAILLMService(api_key="x", base_url="http://127.0.0.1:9/v1", settings=OpenAILLMService.Settings(model="m"))
    hooks = service._client._client.event_hooks["request"]
    original = service.get_chat_completions
    instrumentor = LLMInstrumentor(Sink()).instrument(service)
    assert len(hooks) == 1 and service.get_chat_completions != original
    instrumentor.uninstrument()
    assert hooks == [] and service.get_chat_completions == original
    assert "get_chat_completions" not in vars(service) and "build_chat_completion_params" not in vars(service)
    assert not instrumentor.is_instrumented
    instrumentor.uninstrument()  # idempotent

    stand_in, sink = StandIn(), Sink()
    LLMInstrumentor(sink).instrument(stand_in).uninstrument()
    asyncio.run(_drain(stand_in))
    assert sink.events == [] and "extra_headers" not in stand_in.params[0]


def test_another_pipecat_version_warns_and_leaves_the_service_alone(monkeypatch):
    monkeypatch.setattr(llm_stream, "_pipecat_version", lambda: "1.15.0")
    service = StandIn()
    with pytest.warns(RuntimeWarning, match="supports pipecat-ai 1.14.x, found 1.15.0"):
        instrumentor = instrument_openai_llm(service, Sink())
    assert not instrumentor.is_instrumented and vars(service).keys() == {"params", "_chunks", "_hang"}
    instrumentor.uninstrument()  # nothing to undo, no error


def test_a_service_that_is_not_openai_compatible_warns_instead_of_crashing():
    with pytest.warns(RuntimeWarning, match="not a pipecat OpenAI-compatible LLM service"):
        instrumentor = instrument_openai_llm(object(), Sink())
    assert not instrumentor.is_instrumented


# --- through the observer: the llm span ---------------------------------------------------

@pytest.mark.asyncio
async def test_a_stall_before_the_response_ends_the_call_with_an_llm_stalled_error_span():
    h = Harness(stage_attributes={sc.SPAN_LLM: {sc.ATTR_GENAI_SERVER_ADDRESS: "http://127.0.0.1:8080/v1",
                                                sc.ATTR_GENAI_SYSTEM: "openai-compatible"}})
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0)
    service = StandIn(hang=True)
    LLMInstrumentor(h.observer, stall_timeout_s=0.05).instrument(service)
    with pytest.raises(LLMStalled):
        await service.get_chat_completions(CONTEXT)
    await h.push(9000, EndFrame())
    llm = h.one(sc.SPAN_LLM)
    assert llm.parent.span_id == h.one(sc.SPAN_TURN).context.span_id
    assert llm.status.status_code == StatusCode.ERROR
    assert llm.status.description == "LLMStalled: LLM server sent no response for 0.05 s"
    assert llm.attributes[sc.ATTR_ERROR_TYPE] == "LLMStalled"
    assert llm.kind == SpanKind.CLIENT and llm.attributes[sc.ATTR_GENAI_OPERATION] == "chat"
    assert llm.attributes[sc.ATTR_SERVER_ADDRESS] == "127.0.0.1" and llm.attributes[sc.ATTR_SERVER_PORT] == 8080
    assert llm.attributes[sc.ATTR_GENAI_PROVIDER] == "openai-compatible" and sc.ATTR_GENAI_SYSTEM not in llm.attributes


@pytest.mark.asyncio
async def test_an_llm_error_is_redacted_in_the_span_status():
    h = Harness(redact=True)
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0)
    call = h.observer.begin_llm_call(2530 * MS)
    h.observer.llm_request_sent(call, 2540 * MS)
    call.fail(RuntimeError("server rejected claim 45712 for jo.lee@example.com\nmore"))
    call.end_ns = 2600 * MS
    await h.push(9000, EndFrame())
    llm = h.one(sc.SPAN_LLM)
    assert llm.status.description == "RuntimeError: server rejected claim ##### for <email>"
    assert llm.attributes[sc.ATTR_ERROR_TYPE] == "RuntimeError"


@pytest.mark.asyncio
async def test_the_llm_span_of_a_call_made_while_the_caller_speaks_again_is_under_the_answered_turn():
    h = Harness()
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0)  # turn 1 committed at 2510
    await h.push(2600, VADUserStartedSpeakingFrame(start_secs=0.2))  # turn 2 begins, not committed
    call = h.observer.begin_llm_call(2650 * MS)
    h.observer.llm_request_sent(call, 2660 * MS)
    call.add_content(2700 * MS, "Sure.")
    call.end_ns = 2710 * MS
    await h.push(9000, EndFrame())
    turn_1 = next(s for s in h.spans(sc.SPAN_TURN) if s.attributes[sc.ATTR_TURN_NUMBER] == 1)
    assert h.one(sc.SPAN_LLM).parent.span_id == turn_1.context.span_id


@pytest.mark.asyncio
async def test_an_error_frame_from_a_stage_marks_that_stage_s_span_in_the_answered_turn():
    from pipecat.frames.frames import ErrorFrame
    from pipecat.services.tts_service import TTSService

    class FailingTTS(TTSService):
        async def run_tts(self, text, context_id=None):
            yield None

    h = Harness(redact=True)
    await h.push(0, StartFrame())
    await speak_and_commit(h, 0)
    # pipecat pushes the ErrorFrame upstream from the failing processor: the pusher is the stage
    await h.push(2600, ErrorFrame(error="voice 4711 missing", exception=FileNotFoundError()), source=FailingTTS(sample_rate=16000))
    assert h.observer.last_activity_mono_ns == 2510 * MS  # an error is not activity on the line
    await h.push(9000, EndFrame())
    tts = h.one(sc.SPAN_TTS)
    assert tts.status.status_code == StatusCode.ERROR and tts.status.description == "FileNotFoundError: voice #### missing"
    assert tts.attributes[sc.ATTR_ERROR_TYPE] == "FileNotFoundError"


@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:8080/v1", {sc.ATTR_SERVER_ADDRESS: "127.0.0.1", sc.ATTR_SERVER_PORT: 8080}),
    ("https://api.example.com/v1", {sc.ATTR_SERVER_ADDRESS: "api.example.com", sc.ATTR_SERVER_PORT: 443}),
    ("http://[::1]:9000/v1", {sc.ATTR_SERVER_ADDRESS: "::1", sc.ATTR_SERVER_PORT: 9000}),
    ("http://host:notaport/v1", {sc.ATTR_SERVER_ADDRESS: "host"}),
    ("", {}),
])
def test_server_address_is_the_host_and_the_port_is_separate(url, expected):
    from voicetrace.capture.llm_spans import llm_server_attributes

    assert llm_server_attributes(url) == expected
