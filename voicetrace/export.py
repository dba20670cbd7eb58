"""Live span export over OTLP (gRPC or HTTP/protobuf) to Jaeger or any OTLP backend.

Where to send and how is resolved once (``resolve_otlp_target``) from the command line and the
standard OpenTelemetry environment variables; ``attach_live_export`` adds a non-blocking
processor (``export_processor.LiveExportProcessor``) to a provider that the caller passes in.
Nothing here sets OpenTelemetry globals.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping
from urllib.parse import unquote, urlparse, urlunparse

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from voicetrace.export_processor import ExportStats, LiveExportProcessor

GRPC = "grpc"
HTTP = "http/protobuf"
PROTOCOLS = {"grpc": GRPC, "http": HTTP, "http/protobuf": HTTP}
"""Accepted spellings of OTEL_EXPORTER_OTLP_PROTOCOL / --otlp-protocol (http/json is not offered
by the Python exporters)."""

TRACES_PATH = "/v1/traces"
EXPORT_TIMEOUT_S = 3.0
"""One export attempt (with the exporter's own retries) gives up after this long."""


class OtlpConfigError(ValueError):
    """A bad --otlp URL, protocol or header setting; one line for the user."""


@dataclass(frozen=True)
class OtlpTarget:
    endpoint: str
    """gRPC: ``scheme://host:port``; HTTP: the full URL of the traces endpoint."""
    protocol: str
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def insecure(self) -> bool:
        return urlparse(self.endpoint).scheme != "https"

    def describe(self) -> str:
        return f"{self.endpoint} (OTLP {'gRPC' if self.protocol == GRPC else 'HTTP'})"


def resolve_otlp_target(
    url: str | None = None, protocol: str | None = None, env: Mapping[str, str] | None = None
) -> OtlpTarget | None:
    """The OTLP target from ``--otlp``/``--otlp-protocol`` and the OTEL_EXPORTER_OTLP_* variables.

    None when neither names an endpoint. The protocol is, in order: ``protocol``; what the URL
    says (``grpc://``, port 4317 → gRPC; port 4318 or a ``/v1/traces`` path → HTTP); the
    environment's protocol; HTTP/protobuf (the OpenTelemetry default).
    """
    env = env or {}
    signal_url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    url = url or signal_url or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not url:
        return None
    verbatim = url is signal_url  # the per-signal variable is the full traces URL, as given
    if "://" not in url:
        url = "http://" + url
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https", "grpc", "grpcs") or not parsed.hostname:
        raise OtlpConfigError(f"--otlp {url!r} is not an http(s):// or grpc:// URL with a host")
    try:
        port = parsed.port
    except ValueError:
        raise OtlpConfigError(f"--otlp {url!r} has a bad port") from None

    chosen = protocol or _protocol_from_url(parsed.scheme, port, parsed.path) or (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or HTTP
    )
    if chosen.lower() not in PROTOCOLS:
        raise OtlpConfigError(f"OTLP protocol must be grpc or http/protobuf, not {chosen!r}")
    chosen = PROTOCOLS[chosen.lower()]

    scheme = "https" if parsed.scheme in ("https", "grpcs") else "http"
    if chosen == GRPC:
        endpoint = f"{scheme}://{parsed.netloc}"
    else:
        path = parsed.path if verbatim or parsed.path.endswith(TRACES_PATH) else parsed.path.rstrip("/") + TRACES_PATH
        endpoint = urlunparse((scheme, parsed.netloc, path, "", parsed.query, ""))
    headers = parse_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""))
    headers.update(parse_headers(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "")))
    return OtlpTarget(endpoint, chosen, headers)


def _protocol_from_url(scheme: str, port: int | None, path: str) -> str | None:
    if scheme in ("grpc", "grpcs") or port == 4317:
        return GRPC
    if port == 4318 or path.rstrip("/").endswith(TRACES_PATH):
        return HTTP
    return None


def parse_headers(value: str) -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_HEADERS: ``key=value,key2=value2``, values URL-encoded."""
    headers: dict[str, str] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise OtlpConfigError(f"OTLP header {item.strip()!r} is not key=value")
        headers[unquote(key.strip()).lower()] = unquote(val.strip())
    return headers


def make_span_exporter(target: OtlpTarget, timeout_s: float = EXPORT_TIMEOUT_S) -> SpanExporter:
    if target.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=target.endpoint, insecure=target.insecure, headers=dict(target.headers), timeout=timeout_s)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=target.endpoint, headers=dict(target.headers), timeout=timeout_s)


def attach_live_export(
    provider: TracerProvider,
    target: OtlpTarget,
    warn: Callable[[str], None] | None = None,
    **processor_options: Any,
) -> LiveExportProcessor:
    """Send the provider's spans to ``target`` as they end; returns the processor (its ``stats``)."""
    processor = LiveExportProcessor(make_span_exporter(target), warn=warn, describe=target.describe(), **processor_options)
    provider.add_span_processor(processor)
    return processor


def quiet_exporter_logs() -> None:
    """For applications (the CLI): the OTLP exporters log every failed attempt; voicetrace says it
    once itself. Library code does not call this."""
    for name in ("opentelemetry.exporter.otlp", "opentelemetry.sdk.trace.export"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def run_resource_attributes(
    pipeline_config: Mapping[str, Any],
    conversation_id: str,
    call_file: str,
    environment: str,
) -> dict[str, Any]:
    """Resource attributes of a run: environment, the conversation (searchable on every span,
    also before the conversation span ends) and the pipeline configuration (scalars only)."""
    from voicetrace import semconv as sc

    attrs: dict[str, Any] = {
        sc.RES_DEPLOYMENT_ENVIRONMENT: environment,
        sc.ATTR_CONVERSATION_ID: conversation_id,
        sc.ATTR_CALL_FILE: call_file,
    }
    for key, value in pipeline_config.items():
        if key == "system_prompt":
            continue
        if isinstance(value, Mapping):
            for sub, inner in value.items():
                _put_scalar(attrs, f"{sc.RES_PIPELINE_CONFIG_PREFIX}{key}.{sub}", inner)
        else:
            _put_scalar(attrs, f"{sc.RES_PIPELINE_CONFIG_PREFIX}{key}", value)
    return attrs


def _put_scalar(attrs: dict[str, Any], key: str, value: Any) -> None:
    if isinstance(value, (bool, int, float)):
        attrs[key] = value
    elif isinstance(value, str) and value:
        attrs[key] = value[:256]


def environment_from(env: Mapping[str, str], explicit: str | None = None) -> str:
    """deployment.environment: --environment, else OTEL_RESOURCE_ATTRIBUTES', else ``local``."""
    if explicit:
        return explicit
    for item in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, _, value = item.partition("=")
        if key.strip() in ("deployment.environment", "deployment.environment.name") and value.strip():
            return unquote(value.strip())
    return "local"


def export_summary(target: OtlpTarget, stats: "ExportStats") -> tuple[str, bool]:
    """One line for the end of a run, and whether every span was delivered."""
    if stats.spans_undelivered == 0:
        mean_ms = stats.export_ns_total / max(stats.batches, 1) / 1e6
        return (
            f"otlp: {stats.spans_sent} spans sent to {target.describe()} in {stats.batches} batches "
            f"(mean {mean_ms:.1f} ms each, off the pipeline; longest hand-off {stats.on_end_ns_max / 1000:.0f} µs)",
            True,
        )
    return (
        f"warning: otlp: {stats.spans_undelivered} spans not delivered to {target.describe()} "
        f"({stats.spans_sent} sent); trace.jsonl has them all",
        False,
    )
