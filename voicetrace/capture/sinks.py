"""What instrumented services hand to capture: the sink protocols and the records they fill.

An LLM service wrapper (``LLMInstrumentor``) or the tool runner (``voicetrace.tools``) depends on
this module only; ``VoiceTraceObserver`` implements both sinks. A sink call is made in the
pipeline's own task at the moment the work starts; the record it returns is filled in by the
caller as the work goes on (all times monotonic ns, from the run's one clock).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class LLMCall:
    """One chat request as the client saw it (monotonic ns)."""

    request_ns: int
    """When the HTTP request left the client (until then: when the service began the call)."""
    prepare_ns: int | None = None
    """When the service began the call; request_ns − prepare_ns is client-side preparation."""
    parent: Any = None
    """The OpenTelemetry context of the owning turn (set by the sink)."""
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
    """``Type: first line`` of the exception that ended the call (None: it ended normally)."""
    error_type: str | None = None
    """The exception's class name (``error.type`` on the span)."""
    error_message: str = ""
    """The exception's first line, bounded; may quote the call, so --redact applies to it."""
    wire: Any = None
    """Socket-level stamps (``capture.wire.WireTimes``) when the httpx hooks saw the request."""
    token_wire_ns: list[int] = field(default_factory=list)
    """Per content chunk, when its bytes were read from the socket (parallel to token_times_ns; empty:
    not measured, or the SDK's chunks and the wire's events did not pair up)."""

    @property
    def first_token_ns(self) -> int | None:
        return self.token_times_ns[0] if self.token_times_ns else None

    def add_content(self, t_ns: int, text: str, tokens: int = 1) -> None:
        self.token_times_ns.append(t_ns)
        self.token_counts.append(max(1, tokens))
        self.text += text

    def fail(self, exc: BaseException) -> None:
        """Record the exception that ended the call: its type and its first line (bounded)."""
        self.error_type = type(exc).__name__
        self.error_message = str(exc).strip().split("\n")[0][:200]
        self.error = f"{self.error_type}: {self.error_message}" if self.error_message else self.error_type


@dataclass
class ToolRun:
    name: str
    start_ns: int
    end_ns: int | None = None
    arguments: str | None = None
    result_chars: int = 0
    error: str | None = None
    """The exception's class name when the tool failed (``error.type`` on the span)."""
    trigger: str = "intent"
    """``intent`` (rules on the transcript), ``function_call`` (the model asked) or ``call_start``."""


@runtime_checkable
class LLMCallSink(Protocol):
    def begin_llm_call(self, prepare_ns: int) -> LLMCall | None:
        """The service began a chat call; None: nothing to record it under (not timed)."""

    def llm_request_sent(self, call: LLMCall, request_ns: int) -> str | None:
        """The HTTP request leaves now: start the call's span; returns its traceparent header value."""

    def end_llm_call(self, call: LLMCall) -> None:
        """The call is over (streamed to the end, failed or cancelled); ``call`` holds its timing."""


@runtime_checkable
class ToolSink(Protocol):
    def begin_tool(self, name: str, arguments: str | None, trigger: str, start_ns: int) -> ToolRun:
        """A tool starts now; the caller fills in end_ns, result_chars and error on the run."""
