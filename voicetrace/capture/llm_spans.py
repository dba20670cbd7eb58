"""What goes on an ``llm`` span: the GenAI client-span attributes, timing, and the call's error.

Kept apart from the span builder so the rules read in one place: the span is CLIENT with
``gen_ai.operation.name = chat`` (its name stays ``llm``, see semconv), the server is named by
host and port, and an error carries ``error.type`` and a status text that --redact masks.
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import urlsplit

from voicetrace import semconv as sc
from voicetrace.capture.content import ContentPolicy, redact
from voicetrace.capture.sinks import LLMCall

_NS_PER_MS = 1_000_000
_DEFAULT_PORTS = {"http": 80, "https": 443}


def llm_server_attributes(base_url: str | None) -> dict[str, Any]:
    """``server.address`` (host only) and ``server.port`` from an LLM base URL such as
    ``http://127.0.0.1:8080/v1``; the scheme's default port when the URL names none."""
    if not base_url:
        return {}
    parts = urlsplit(base_url if "://" in base_url else f"//{base_url}")
    if not parts.hostname:
        return {}
    try:
        port = parts.port if parts.port is not None else _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a port that is not a number: name the host only
        port = None
    return {sc.ATTR_SERVER_ADDRESS: parts.hostname, **({sc.ATTR_SERVER_PORT: port} if port is not None else {})}


def llm_stage_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The static attributes every ``llm`` span starts with, from the pipeline's stage attributes.

    A base URL given as ``server.address`` is split into host and port, and the deprecated
    ``gen_ai.system`` is written as ``gen_ai.provider.name``, so callers written for the old
    names (voicetrace's runner before the split) still produce conventional spans."""
    attrs = {sc.ATTR_GENAI_OPERATION: sc.GENAI_OPERATION_CHAT, **attributes}
    system = attrs.pop(sc.ATTR_GENAI_SYSTEM, None)
    if system is not None:
        attrs.setdefault(sc.ATTR_GENAI_PROVIDER, system)
    address = attrs.get(sc.ATTR_SERVER_ADDRESS)
    if isinstance(address, str) and "://" in address:
        attrs.pop(sc.ATTR_SERVER_ADDRESS)
        for key, value in llm_server_attributes(address).items():
            attrs.setdefault(key, value)
    return attrs


def call_attributes(call: LLMCall, content: ContentPolicy) -> dict[str, Any]:
    """The call's own measurements (tokens, TTFT, TPOT, output) for its span."""
    tokens = call.token_times_ns
    output_tokens = call.output_tokens if call.output_tokens is not None else sum(call.token_counts)
    attrs: dict[str, Any] = {
        sc.ATTR_GENAI_OPERATION: sc.GENAI_OPERATION_CHAT,
        sc.ATTR_GENAI_OUTPUT_TOKENS: output_tokens,
        sc.ATTR_GENAI_INPUT_TOKENS: call.input_tokens,
        sc.ATTR_LLM_CHUNKS: len(tokens),
        sc.ATTR_LLM_OUTPUT_CHARS: len(call.text),
        sc.ATTR_LLM_OUTPUT: content.text(call.text),
        sc.ATTR_GENAI_FINISH_REASONS: [call.finish_reason] if call.finish_reason else None,
        sc.ATTR_LLM_TOOL_CALLS: call.tool_calls or None,
        sc.ATTR_LLM_PREPARE_MS: (call.request_ns - call.prepare_ns) / _NS_PER_MS if call.prepare_ns is not None else None,
    }
    attrs.update(wire_attributes(call))
    if tokens:
        attrs[sc.ATTR_LLM_TTFT_MS] = (tokens[0] - call.request_ns) / _NS_PER_MS
        n = sum(call.token_counts)
        if n > 1:
            attrs[sc.ATTR_LLM_TPOT_MS] = (tokens[-1] - tokens[0]) / _NS_PER_MS / (n - 1)
    return attrs


def wire_attributes(call: LLMCall) -> dict[str, Any]:
    """TTFT on the wire and the delivery lag (capture.wire), when every content chunk was paired with its read."""
    wire, tokens, reads = call.wire, call.token_times_ns, call.token_wire_ns
    if wire is None or wire.request_ns is None:
        return {}
    attrs: dict[str, Any] = {sc.ATTR_LLM_REQUEST_WRITE_MS: (wire.request_ns - call.request_ns) / _NS_PER_MS}
    if tokens and len(reads) == len(tokens):
        attrs[sc.ATTR_LLM_TTFT_WIRE_MS] = (reads[0] - wire.request_ns) / _NS_PER_MS
        attrs[sc.ATTR_LLM_DELIVERY_LAG_MS] = (tokens[0] - reads[0]) / _NS_PER_MS
        attrs[sc.ATTR_LLM_DELIVERY_LAG_MAX_MS] = max(t - r for t, r in zip(tokens, reads)) / _NS_PER_MS
    return attrs


def error_status(kind: str, message: str, content: ContentPolicy) -> str:
    """A stage's error for its span status; the message may quote the call, so --redact applies."""
    if content.redact:
        message = redact(message)
    return f"{kind}: {message}" if message else kind


def call_error(call: LLMCall, stage_error: tuple[int, str, str] | None, *, interrupted: bool,
               superseded: bool, content: ContentPolicy) -> tuple[str | None, str | None]:
    """(status text, error.type) of an ``llm`` span, or (None, None) when the call succeeded.

    In order: the exception that ended the call; an ErrorFrame the LLM stage pushed in the turn;
    a call that produced nothing although nobody interrupted it."""
    if call.error_type is not None:
        return error_status(call.error_type, call.error_message, content), call.error_type
    if call.error:  # set by hand, without the exception: the whole text is the message
        return (redact(call.error) if content.redact else call.error), sc.ERROR_TYPE_OTHER
    if stage_error is not None:
        _, kind, message = stage_error
        return error_status(kind, message, content), kind
    if not call.token_times_ns and not call.tool_calls and not interrupted:
        # A later call in the same turn replaced this one (pipecat re-ran the LLM with more of
        # the caller's words): cancelled, not a server that sent nothing.
        text = "cancelled before the first token" if superseded else "no content tokens received"
        return text, sc.ERROR_TYPE_OTHER
    return None, None
