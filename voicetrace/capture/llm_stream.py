"""Client-side timing of a pipecat OpenAI-compatible LLM service, as an instrumentor.

``LLMInstrumentor(sink).instrument(service)`` wraps one pipecat ``BaseOpenAILLMService``
instance: each request gets a W3C ``traceparent`` header for its turn's ``llm`` span, the
moment the request goes out is stamped by an httpx request hook, and every streamed chunk is
timed as it arrives (``TimedStream``). ``uninstrument()`` puts the service back as it was.

It patches two methods of the instance (``get_chat_completions``, ``build_chat_completion_params``)
and adds a request hook to the service's httpx client: pipecat internals, checked against the
version written here. On another pipecat version, or a service without those methods, it warns
and does nothing: the observer then times the LLM from its frames, and the call is never broken.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import warnings
from typing import Any

from voicetrace.capture.sinks import LLMCall, LLMCallSink
from voicetrace.capture import wire
from voicetrace.capture.timed_stream import LLMStalled, TimedStream
from voicetrace.clock import RunClock

__all__ = ["LLMCall", "LLMInstrumentor", "LLMStalled", "SUPPORTED_PIPECAT", "TimedStream", "instrument_openai_llm"]

SUPPORTED_PIPECAT = "1.14"
"""The pipecat-ai minor version whose service internals this instrumentor patches (1.14.x)."""
_PATCHED = ("build_chat_completion_params", "get_chat_completions")
_ABSENT = object()


def _pipecat_version() -> str | None:
    try:
        return importlib.metadata.version("pipecat-ai")
    except importlib.metadata.PackageNotFoundError:
        return None


def _supported(version: str | None) -> bool:
    return version is not None and version.split(".")[:2] == SUPPORTED_PIPECAT.split(".")


class LLMInstrumentor:
    """Times every chat request of one pipecat OpenAI-compatible LLM service and tags it with traceparent.

    The ``llm`` span starts when the HTTP request leaves (an httpx request hook, which also
    sets the header); without access to the service's httpx client it starts when the
    service builds the request, and the header goes in through ``extra_headers``.

    ``llama_cpp_timings``: ask llama.cpp for per-token ``timings`` (server-side child spans).
    ``stall_timeout_s``: a server that sends nothing for this long (before the response or
    between chunks) ends the call with ``LLMStalled``; the turn's ``llm`` span records the error
    and the pipeline goes on with the next turn.
    ``clock``: every stamp's clock; by default the sink's (``VoiceTraceObserver.clock``).
    """

    def __init__(self, sink: LLMCallSink, *, llama_cpp_timings: bool = False,
                 stall_timeout_s: float | None = None, clock: RunClock | None = None) -> None:
        self._sink = sink
        self._llama_cpp_timings = llama_cpp_timings
        self._stall_timeout_s = stall_timeout_s
        self._clock = clock or getattr(sink, "clock", None) or RunClock()
        self._service: Any = None
        self._saved: dict[str, Any] = {}
        self._hooks: list | None = None
        self._response_hooks: list | None = None
        self._pending: LLMCall | None = None
        self._stamped = False  # the pending call's request has gone out (a retry is the same call)

    @property
    def is_instrumented(self) -> bool:
        """True while a service's requests are timed here (False: frame timing applies)."""
        return self._service is not None

    @property
    def uses_http_hooks(self) -> bool:
        """True when the request is stamped by the httpx hook (as it leaves), not when built."""
        return self._hooks is not None

    def instrument(self, service) -> "LLMInstrumentor":
        if self._service is not None:
            if self._service is not service:
                warnings.warn("voicetrace: this LLMInstrumentor already instruments another service; "
                              "use one instrumentor per service", RuntimeWarning, stacklevel=2)
            return self
        version = _pipecat_version()
        if not _supported(version):
            warnings.warn(f"voicetrace: LLM timing supports pipecat-ai {SUPPORTED_PIPECAT}.x, found {version}; "
                          "the LLM is timed from pipecat's frames instead", RuntimeWarning, stacklevel=2)
            return self
        if not all(callable(getattr(service, name, None)) for name in _PATCHED):
            warnings.warn(f"voicetrace: {type(service).__name__} is not a pipecat OpenAI-compatible LLM service; "
                          "the LLM is timed from pipecat's frames instead", RuntimeWarning, stacklevel=2)
            return self
        self._service = service
        self._saved = {name: vars(service).get(name, _ABSENT) for name in _PATCHED}
        originals = {name: getattr(service, name) for name in _PATCHED}
        http_client = getattr(getattr(service, "_client", None), "_client", None)
        hooks = getattr(http_client, "event_hooks", None)
        if isinstance(hooks, dict) and isinstance(hooks.get("request", []), list):
            self._hooks = hooks.setdefault("request", [])
            self._hooks.append(self._on_request)
            if isinstance(hooks.get("response", []), list):  # socket-level read stamps (capture.wire)
                self._response_hooks = hooks.setdefault("response", [])
                self._response_hooks.append(wire.on_response)
        service.build_chat_completion_params = self._wrap_build(originals["build_chat_completion_params"])
        service.get_chat_completions = self._wrap_get(originals["get_chat_completions"])
        return self

    def uninstrument(self) -> None:
        """Restore the service's methods and remove the request hook (idempotent)."""
        service, self._service = self._service, None
        if service is None:
            return
        for name, saved in self._saved.items():
            if saved is _ABSENT:
                vars(service).pop(name, None)
            else:
                setattr(service, name, saved)
        if self._hooks is not None and self._on_request in self._hooks:
            self._hooks.remove(self._on_request)
        if self._response_hooks is not None and wire.on_response in self._response_hooks:
            self._response_hooks.remove(wire.on_response)
        self._hooks, self._response_hooks, self._saved, self._pending = None, None, {}, None

    # --- the wrappers -------------------------------------------------------------------
    def _wrap_build(self, original):
        def build_chat_completion_params(params_from_context):
            params = original(params_from_context)
            call = self._pending
            if call is not None and self._hooks is None and not self._stamped:
                self._stamped = True
                traceparent = self._sink.llm_request_sent(call, self._clock.mono_ns())
                if traceparent:
                    params["extra_headers"] = {**(params.get("extra_headers") or {}), "traceparent": traceparent}
            if self._llama_cpp_timings:
                params["extra_body"] = {"timings_per_token": True, **(params.get("extra_body") or {})}
            return params

        return build_chat_completion_params

    def _wrap_get(self, original):
        sink, clock, stall_timeout_s = self._sink, self._clock, self._stall_timeout_s

        async def get_chat_completions(context):
            call = sink.begin_llm_call(clock.mono_ns())
            self._pending, self._stamped = call, False
            try:
                if stall_timeout_s:
                    try:
                        stream = await asyncio.wait_for(original(context), stall_timeout_s)
                    except asyncio.TimeoutError:
                        raise LLMStalled(f"LLM server sent no response for {stall_timeout_s:g} s") from None
                else:
                    stream = await original(context)
            except BaseException as exc:
                if call is not None:
                    call.fail(exc)
                    call.end_ns = clock.mono_ns()
                    sink.end_llm_call(call)
                raise
            finally:
                self._pending = None
            if call is None:
                return stream
            return TimedStream(stream, call, sink, stall_timeout_s, mono_ns=clock.mono_ns)

        return get_chat_completions

    async def _on_request(self, request) -> None:
        call = self._pending
        if call is not None and not self._stamped and request.url.path.endswith("/chat/completions"):
            self._stamped = True
            traceparent = self._sink.llm_request_sent(call, self._clock.mono_ns())
            if traceparent:
                request.headers["traceparent"] = traceparent
            if self._response_hooks is not None:
                call.wire = wire.attach_request(request, self._clock.mono_ns)


def instrument_openai_llm(service, sink: LLMCallSink, **options) -> LLMInstrumentor:
    """``LLMInstrumentor(sink, **options).instrument(service)``; keep it to ``uninstrument()`` later."""
    return LLMInstrumentor(sink, **options).instrument(service)
