"""Where live spans go: the OTLP target, resolved once from the command line and the standard
OTEL_EXPORTER_OTLP_* environment variables."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Mapping
from urllib.parse import urlparse, urlunparse

from opentelemetry.util.re import parse_env_headers

from voicetrace.errors import UsageError

GRPC = "grpc"
HTTP = "http/protobuf"
PROTOCOLS = {"grpc": GRPC, "http": HTTP, "http/protobuf": HTTP}
"""Accepted spellings of OTEL_EXPORTER_OTLP_PROTOCOL / --otlp-protocol (http/json is not offered
by the Python exporters)."""

TRACES_PATH = "/v1/traces"
HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
"""Read in this order: the per-signal variable's headers win."""


class OtlpConfigError(UsageError, ValueError):
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
    headers: dict[str, str] = {}
    for variable in HEADER_VARIABLES:
        headers.update(env_headers(env.get(variable, ""), variable))
    return OtlpTarget(endpoint, chosen, headers)


def _protocol_from_url(scheme: str, port: int | None, path: str) -> str | None:
    if scheme in ("grpc", "grpcs") or port == 4317:
        return GRPC
    if port == 4318 or path.rstrip("/").endswith(TRACES_PATH):
        return HTTP
    return None


def env_headers(value: str, variable: str = "OTEL_EXPORTER_OTLP_HEADERS") -> dict[str, str]:
    """``key=value,key2=value2`` (URL-encoded) parsed by OpenTelemetry's own parser, as leniently
    as its OTLP exporters parse it; an item it cannot read is an error here, where OpenTelemetry
    would log and skip it (a dropped auth header is a silent 401 later)."""
    headers: dict[str, str] = {}
    for item in value.split(","):
        if not item.strip():
            continue
        with _quiet(parse_env_headers.__module__):  # our error says it, in one line
            parsed = parse_env_headers(item, liberal=True)
        if not parsed:
            raise OtlpConfigError(f"{variable}: OTLP header {item.strip()!r} is not key=value")
        headers.update(parsed)
    return headers


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    logger = logging.getLogger(logger_name)
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was
