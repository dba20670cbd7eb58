"""Socket-level stamps of one streamed LLM request: when its bytes were written and read.

The chunk stamps in ``timed_stream`` are taken when the openai SDK hands a chunk to pipecat, after
httpx, the SSE decoder and the SDK's models: that is when pipecat *got* the token. ``WireTimes``
stamps the same request at the transport: the request body written to the socket (httpcore's
``trace`` extension, ``http11.send_request_body.complete``) and each server-sent event when the
read that completed it returned (``wire_stream`` wraps the response's byte stream). TTFT on the wire
is first content event read − request written; delivered − wire is the delivery lag.

Both are taken on the event loop right after the system call returns, so a loop blocked by other
work still delays them: under load the wire stamps stay close to the server's, the delivered ones
drift (``bench/timing_accuracy.py`` measures both against the scripted server's own send stamps).
"""

from __future__ import annotations

from typing import Any, Callable

WIRE_KEY = "voicetrace.wire"
"""The request extension holding its WireTimes (httpx passes extensions through untouched)."""
_SENT = "send_request_body.complete"


class WireTimes:
    def __init__(self, mono_ns: Callable[[], int], previous_trace: Callable | None = None) -> None:
        self._mono_ns = mono_ns
        self._previous = previous_trace
        self.request_ns: int | None = None
        """When the request body was written to the socket (monotonic ns)."""
        self.event_ns: list[int] = []
        """Per server-sent data event (``[DONE]`` excluded, as the SDK does), when its last byte was read."""
        self._buffer = b""

    async def trace(self, name: str, info: dict) -> None:
        """httpcore's ``trace`` extension: called at each step of the request."""
        if name.endswith(_SENT):
            self.request_ns = self._mono_ns()
        if self._previous is not None:
            await self._previous(name, info)

    def feed(self, data: bytes, t_ns: int) -> None:
        """Bytes read at ``t_ns``: every event they complete is stamped ``t_ns``."""
        buffer = (self._buffer + data).replace(b"\r\n", b"\n")
        *events, self._buffer = buffer.split(b"\n\n")
        for event in events:
            payload = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
            if payload and not payload[0].startswith(b"[DONE]"):
                self.event_ns.append(t_ns)


class _WireStream:
    """The response's byte stream, passed through unchanged, each read stamped on arrival."""

    def __init__(self, inner: Any, times: WireTimes) -> None:
        self._inner = inner
        self._times = times

    async def __aiter__(self):
        mono_ns, feed = self._times._mono_ns, self._times.feed
        async for part in self._inner:
            feed(part, mono_ns())
            yield part

    async def aclose(self) -> None:
        await self._inner.aclose()


_STREAM_CLASSES: dict[type, type] = {}


def wire_stream(inner: Any, times: WireTimes) -> Any | None:
    """``inner`` wrapped, as a subclass of the same ``AsyncByteStream`` base (httpx, or the copy of it an
    SDK ships: the response checks the type); None when it is not an async byte stream."""
    base = next((c for c in type(inner).__mro__ if c.__name__ == "AsyncByteStream"), None)
    if base is None:
        return None
    cls = _STREAM_CLASSES.get(base)
    if cls is None:
        cls = _STREAM_CLASSES[base] = type("WireStream", (_WireStream, base), {})
    return cls(inner, times)


def attach_request(request, mono_ns: Callable[[], int]) -> WireTimes:
    """Stamp this request's write (keeping any trace callback the caller set) and mark it for its response."""
    times = WireTimes(mono_ns, request.extensions.get("trace"))
    request.extensions["trace"] = times.trace
    request.extensions[WIRE_KEY] = times
    return times


async def on_response(response) -> None:
    """httpx response hook: wrap the byte stream of a request ``attach_request`` marked."""
    times = response.request.extensions.get(WIRE_KEY)
    if times is not None:
        wrapped = wire_stream(response.stream, times)
        if wrapped is not None:
            response.stream = wrapped
