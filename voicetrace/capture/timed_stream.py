"""An OpenAI streaming response, timed chunk by chunk as it arrives.

Each content chunk's arrival is stamped (on the run's clock) before pipecat does anything with
it; role-only and empty chunks are not tokens. llama.cpp's ``timings`` (per chunk with
``timings_per_token``, else on the last chunk) are kept for the server-side child spans.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from voicetrace.capture.sinks import LLMCall, LLMCallSink

log = logging.getLogger(__name__)


class LLMStalled(TimeoutError):
    """The server sent nothing for the stall timeout: the turn's LLM call ends with this error."""


def _chunk_tokens(timings: dict | None, previous_predicted: int) -> tuple[int, int]:
    """Tokens in this chunk from llama.cpp's cumulative predicted_n (1 when unknown)."""
    if not timings or "predicted_n" not in timings:
        return 1, previous_predicted
    predicted = int(timings["predicted_n"])
    return max(1, predicted - previous_predicted), predicted


class TimedStream:
    """Wraps an openai AsyncStream; records each chunk's arrival, passes chunks through unchanged."""

    def __init__(self, stream, call: LLMCall, sink: LLMCallSink, stall_timeout_s: float | None = None,
                 *, mono_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self._stream = stream
        self._call = call
        self._sink = sink
        self._predicted = 0
        self._ended = False
        self._stall_timeout_s = stall_timeout_s
        self._mono_ns = mono_ns
        self._chunks = 0  # chunks the SDK yielded: the k-th pairs with the wire's k-th data event

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
                self._observe(chunk, self._mono_ns())
                yield chunk
        except BaseException as exc:
            self._call.fail(exc)
            raise
        finally:
            self._finish()

    def _wire_ns(self) -> int | None:
        """When this chunk's bytes were read (None: not measured, or the pairing broke)."""
        times, k = self._call.wire, self._chunks
        self._chunks += 1
        if times is None:
            return None
        if k >= len(times.event_ns):  # more chunks than events: not the stream we framed
            self._call.wire = None
            self._call.token_wire_ns.clear()
            return None
        return times.event_ns[k]

    def _observe(self, chunk, t_ns: int) -> None:
        wire_ns = self._wire_ns()
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
                if wire_ns is not None:
                    self._call.token_wire_ns.append(wire_ns)
        except Exception:  # timing must never break the call
            log.debug("could not read an LLM chunk", exc_info=True)

    def _finish(self) -> None:
        if self._ended:
            return
        self._ended = True
        self._call.end_ns = self._mono_ns()
        self._sink.end_llm_call(self._call)

    async def close(self) -> None:
        self._finish()
        closer = getattr(self._stream, "close", None) or getattr(self._stream, "aclose", None)
        if closer is not None:
            await closer()

    def __getattr__(self, name):
        return getattr(self._stream, name)
