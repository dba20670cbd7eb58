"""Client-side timing of an OpenAI-compatible streaming chat call, chunk by chunk.

``instrument_openai_llm(service, observer)`` wraps a pipecat OpenAI-compatible LLM service:
each request gets a W3C ``traceparent`` header for the turn's ``llm`` span, the moment the
request goes out is stamped by an httpx request hook, and every streamed chunk is timed as
it arrives, before pipecat does anything with it. llama.cpp's ``timings`` (per chunk with
``timings_per_token``, else on the last chunk) are kept for the server-side child spans.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)


@dataclass
class LLMCall:
    """One chat request as the client saw it (monotonic ns)."""

    request_ns: int
    """When the HTTP request left the client (until then: when the service began the call)."""
    prepare_ns: int | None = None
    """When the service began the call; request_ns − prepare_ns is client-side preparation."""
    parent: Any = None
    span: Any = None
    traceparent: str | None = None
    token_times_ns: list[int] = field(default_factory=list)
    token_counts: list[int] = field(default_factory=list)
    text: str = ""
    end_ns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str | None = None
    server_timings: dict | None = None
    tool_calls: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def first_token_ns(self) -> int | None:
        return self.token_times_ns[0] if self.token_times_ns else None

    def add_content(self, t_ns: int, text: str, tokens: int = 1) -> None:
        self.token_times_ns.append(t_ns)
        self.token_counts.append(max(1, tokens))
        self.text += text


class LLMStalled(TimeoutError):
    """The server sent nothing for the stall timeout: the turn's LLM call ends with this error."""


class LLMCallSink(Protocol):
    def begin_llm_call(self, prepare_ns: int) -> LLMCall | None: ...

    def llm_request_sent(self, call: LLMCall, request_ns: int) -> str | None:
        """Start the call's span; returns the traceparent header value for it."""

    def end_llm_call(self, call: LLMCall) -> None: ...


def _chunk_tokens(timings: dict | None, previous_predicted: int) -> tuple[int, int]:
    """Tokens in this chunk from llama.cpp's cumulative predicted_n (1 when unknown)."""
    if not timings or "predicted_n" not in timings:
        return 1, previous_predicted
    predicted = int(timings["predicted_n"])
    return max(1, predicted - previous_predicted), predicted


class TimedStream:
    """Wraps an openai AsyncStream; records each chunk's arrival, passes chunks through unchanged."""

    def __init__(self, stream, call: LLMCall, sink: LLMCallSink, stall_timeout_s: float | None = None) -> None:
        self._stream = stream
        self._call = call
        self._sink = sink
        self._predicted = 0
        self._ended = False
        self._stall_timeout_s = stall_timeout_s

    def __aiter__(self):
        return self._iterate()

    async def _next(self, iterator):
        if not self._stall_timeout_s:
            return await iterator.__anext__()
        try:
            return await asyncio.wait_for(iterator.__anext__(), self._stall_timeout_s)
        except asyncio.TimeoutError:
            # A server that stops mid-stream would hold the turn forever: end it here, with the error.
            raise LLMStalled(f"LLM stream stalled: no chunk for {self._stall_timeout_s:g} s") from None

    async def _iterate(self):
        iterator = self._stream.__aiter__()
        try:
            while True:
                try:
                    chunk = await self._next(iterator)
                except StopAsyncIteration:
                    break
                self._observe(chunk, time.monotonic_ns())
                yield chunk
        except BaseException as exc:
            self._call.error = _error_text(exc)
            raise
        finally:
            self._finish()

    def _observe(self, chunk, t_ns: int) -> None:
        try:
            extra = getattr(chunk, "model_extra", None) or {}
            timings = extra.get("timings")
            if timings:
                self._call.server_timings = timings
            if getattr(chunk, "usage", None):
                self._call.input_tokens = chunk.usage.prompt_tokens
                self._call.output_tokens = chunk.usage.completion_tokens
            if not chunk.choices:
                return
            choice = chunk.choices[0]
            if choice.finish_reason:
                self._call.finish_reason = choice.finish_reason
            delta = choice.delta
            if delta is None:
                return
            for tool_call in delta.tool_calls or ():
                if tool_call.function and tool_call.function.name:
                    self._call.tool_calls.append(tool_call.function.name)
            # Role-only and empty chunks are not tokens: TTFT waits for real content.
            if delta.content:
                tokens, self._predicted = _chunk_tokens(timings, self._predicted)
                self._call.add_content(t_ns, delta.content, tokens)
        except Exception:  # timing must never break the call
            log.debug("could not read an LLM chunk", exc_info=True)

    def _finish(self) -> None:
        if self._ended:
            return
        self._ended = True
        self._call.end_ns = time.monotonic_ns()
        self._sink.end_llm_call(self._call)

    async def close(self) -> None:
        self._finish()
        closer = getattr(self._stream, "close", None) or getattr(self._stream, "aclose", None)
        if closer is not None:
            await closer()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _error_text(exc: BaseException) -> str:
    """The error for the span's status: the exception's type and its first line (bounded)."""
    first_line = str(exc).strip().split("\n")[0][:200]
    return f"{type(exc).__name__}: {first_line}" if first_line else type(exc).__name__


def instrument_openai_llm(service, sink: LLMCallSink, *, llama_cpp_timings: bool = False,
                          stall_timeout_s: float | None = None) -> None:
    """Time every chat request of a pipecat BaseOpenAILLMService and tag it with traceparent.

    The ``llm`` span starts when the HTTP request leaves (an httpx request hook, which also
    sets the header); without access to the service's httpx client it starts when the
    service begins the call and the header goes in through ``extra_headers``.

    ``stall_timeout_s``: a server that sends nothing for this long (before the response or
    between chunks) ends the call with ``LLMStalled``; the turn's ``llm`` span records the error
    and the pipeline goes on with the next turn.
    """
    pending: dict[str, LLMCall | None] = {"call": None}
    original_build = service.build_chat_completion_params
    original_get = service.get_chat_completions
    http_client = getattr(getattr(service, "_client", None), "_client", None)
    hooks = getattr(http_client, "event_hooks", None)
    hooked = isinstance(hooks, dict)

    def build_chat_completion_params(params_from_context):
        params = original_build(params_from_context)
        call = pending["call"]
        if call is not None and not hooked:
            traceparent = sink.llm_request_sent(call, time.monotonic_ns())
            if traceparent:
                params["extra_headers"] = {**(params.get("extra_headers") or {}), "traceparent": traceparent}
        if llama_cpp_timings:
            params["extra_body"] = {"timings_per_token": True, **(params.get("extra_body") or {})}
        return params

    async def get_chat_completions(context):
        call = sink.begin_llm_call(time.monotonic_ns())
        pending["call"] = call
        try:
            if stall_timeout_s:
                try:
                    stream = await asyncio.wait_for(original_get(context), stall_timeout_s)
                except asyncio.TimeoutError:
                    raise LLMStalled(f"LLM server sent no response for {stall_timeout_s:g} s") from None
            else:
                stream = await original_get(context)
        except BaseException as exc:
            if call is not None:
                call.error = _error_text(exc)
                call.end_ns = time.monotonic_ns()
                sink.end_llm_call(call)
            raise
        finally:
            pending["call"] = None
        return TimedStream(stream, call, sink, stall_timeout_s) if call is not None else stream

    async def on_request(request) -> None:
        call = pending["call"]
        if call is not None and call.span is None and request.url.path.endswith("/chat/completions"):
            traceparent = sink.llm_request_sent(call, time.monotonic_ns())
            if traceparent:
                request.headers["traceparent"] = traceparent

    service.build_chat_completion_params = build_chat_completion_params
    service.get_chat_completions = get_chat_completions
    if hooked:
        hooks.setdefault("request", []).append(on_request)
