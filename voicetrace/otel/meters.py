"""The meter provider of one call: OTLP metrics to the traces' endpoint, and a Prometheus scrape endpoint.

Settings follow the standard variables: OTLP metrics go where spans go (``--otlp`` /
OTEL_EXPORTER_OTLP_*; OTEL_EXPORTER_OTLP_METRICS_ENDPOINT for metrics alone) when OTEL_METRICS_EXPORTER
names ``otlp`` or that endpoint is set (``prometheus``, ``none`` and lists work as usual), OTEL_EXPORTER_PROMETHEUS_HOST /
_PORT place the scrape endpoint (loopback unless told otherwise). An explicit ``prometheus_port``
(``--prometheus-port``) beats the variables.

Nothing global: the provider is handed to the observer; the Prometheus reader's collector is moved
off prometheus_client's global registry onto one of its own, served on its own HTTP server. An
unreachable OTLP endpoint costs one warning (``warn``) and nothing else.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Mapping

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from voicetrace import semconv as sc
from voicetrace.otel.target import GRPC, TRACES_PATH, OtlpConfigError, OtlpTarget

log = logging.getLogger(__name__)

METRICS_PATH = "/v1/metrics"
DEFAULT_PROMETHEUS_HOST = "127.0.0.1"
DEFAULT_PROMETHEUS_PORT = 9464
"""OpenTelemetry's default for OTEL_EXPORTER_PROMETHEUS_PORT."""
EXPORT_INTERVAL_MS = 10_000
"""OTLP metrics leave at least this often (OTEL_METRIC_EXPORT_INTERVAL overrides) and once at the end."""
EXPORT_TIMEOUT_S = 3.0
_EXPORTERS = {"otlp", "prometheus", "none"}


@dataclass(frozen=True)
class MetricsExport:
    """Where a call's metrics go. Both None: the meter provider still records (for readers added later)."""

    otlp: OtlpTarget | None = None
    prometheus: tuple[str, int] | None = None
    """(host, port) of the scrape endpoint."""
    interval_ms: int = EXPORT_INTERVAL_MS


def metrics_target(traces: OtlpTarget, env: Mapping[str, str]) -> OtlpTarget:
    """The metrics endpoint beside ``traces``: same host, ``/v1/metrics`` over HTTP."""
    url = env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    if url:
        endpoint = url if "://" in url else "http://" + url
    elif traces.protocol == GRPC:
        endpoint = traces.endpoint
    else:
        base = traces.endpoint[: -len(TRACES_PATH)] if traces.endpoint.endswith(TRACES_PATH) else traces.endpoint.rstrip("/")
        endpoint = base + METRICS_PATH
    return OtlpTarget(endpoint, traces.protocol, traces.headers)


def resolve_metrics_export(otlp: OtlpTarget | None, prometheus_port: int | None = None,
                           env: Mapping[str, str] | None = None) -> MetricsExport:
    """``otlp``: the traces' target (None: no OTLP). Raises OtlpConfigError (a UsageError) on a bad value."""
    env = env or {}
    chosen = {e.strip().lower() for e in env.get("OTEL_METRICS_EXPORTER", "").split(",") if e.strip()}
    unknown = chosen - _EXPORTERS
    if unknown:
        raise OtlpConfigError(f"OTEL_METRICS_EXPORTER: {', '.join(sorted(unknown))} not offered (otlp, prometheus, none)")
    if prometheus_port is not None and not 0 <= prometheus_port <= 65535:
        raise OtlpConfigError(f"--prometheus-port must be 0-65535, not {prometheus_port}")
    # OpenTelemetry's default exporter is otlp; here spans-only unless asked, because the usual --otlp
    # backend (Jaeger) takes no metrics: a Collector in front of Prometheus is asked for by name.
    use_otlp = otlp is not None and ("otlp" in chosen or bool(env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")))
    prometheus = None
    host = env.get("OTEL_EXPORTER_PROMETHEUS_HOST") or DEFAULT_PROMETHEUS_HOST
    if prometheus_port is not None:
        prometheus = (host, prometheus_port)
    elif "prometheus" in chosen:
        raw = env.get("OTEL_EXPORTER_PROMETHEUS_PORT") or str(DEFAULT_PROMETHEUS_PORT)
        if not raw.isdigit() or int(raw) > 65535:
            raise OtlpConfigError(f"OTEL_EXPORTER_PROMETHEUS_PORT must be a port number, not {raw!r}")
        prometheus = (host, int(raw))
    interval = env.get("OTEL_METRIC_EXPORT_INTERVAL", "")
    return MetricsExport(metrics_target(otlp, env) if use_otlp else None, prometheus,
                         int(interval) if interval.isdigit() and int(interval) > 0 else EXPORT_INTERVAL_MS)


_PER_CALL_KEYS = frozenset({sc.ATTR_CONVERSATION_ID, sc.RES_RUN_ID, sc.ATTR_CALL_FILE})


def metrics_resource(resource: Resource) -> Resource:
    """The call's resource less what names one call (conversation.id, run id, call file) and the
    pipeline settings: a metric's resource becomes labels downstream, and those must stay few."""
    return Resource({k: v for k, v in resource.attributes.items()
                     if k not in _PER_CALL_KEYS and not k.startswith(sc.RES_PIPELINE_CONFIG_PREFIX)},
                    resource.schema_url)


class _WarnOnceExporter(MetricExporter):
    """The OTLP exporter, saying once (``warn``) that the endpoint does not take metrics."""

    def __init__(self, inner: MetricExporter, describe: str, warn: Callable[[str], None]) -> None:
        super().__init__(preferred_temporality=inner._preferred_temporality,
                         preferred_aggregation=inner._preferred_aggregation)
        self._inner, self._describe, self._warn = inner, describe, warn
        self.failures = self.exports = 0

    def export(self, metrics_data, timeout_millis: float = 10_000, **kwargs) -> MetricExportResult:
        try:
            result = self._inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception as exc:  # exporters never raise into the pipeline
            log.debug("otlp metrics export failed", exc_info=True)
            result = MetricExportResult.FAILURE
            reason = f": {type(exc).__name__}"
        else:
            reason = ""
        if result is MetricExportResult.SUCCESS:
            self.exports += 1
        else:
            self.failures += 1
            if self.failures == 1:
                self._warn(f"warning: otlp: metrics not accepted by {self._describe}{reason}; the call goes on")
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs) -> None:
        try:
            self._inner.shutdown(timeout_millis=timeout_millis)
        except Exception:
            log.debug("otlp metrics exporter shutdown failed", exc_info=True)


def _otlp_exporter(target: OtlpTarget) -> MetricExporter:
    if target.protocol == GRPC:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcExporter

        return GrpcExporter(endpoint=target.endpoint, insecure=target.insecure, headers=dict(target.headers),
                            timeout=EXPORT_TIMEOUT_S)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpExporter

    return HttpExporter(endpoint=target.endpoint, headers=dict(target.headers), timeout=EXPORT_TIMEOUT_S)


class Meters:
    """The provider, its readers and the scrape endpoint of one call; ``shutdown`` ends them all."""

    def __init__(self, resource: Resource, export: MetricsExport, warn: Callable[[str], None] | None = None) -> None:
        warn = warn or log.warning
        readers = []
        self.otlp_exporter: _WarnOnceExporter | None = None
        if export.otlp is not None:
            self.otlp_exporter = _WarnOnceExporter(_otlp_exporter(export.otlp), export.otlp.describe(), warn)
            readers.append(PeriodicExportingMetricReader(self.otlp_exporter, export_interval_millis=export.interval_ms,
                                                         export_timeout_millis=EXPORT_TIMEOUT_S * 1000))
        self.prometheus: PrometheusEndpoint | None = None
        if export.prometheus is not None:
            try:
                self.prometheus = PrometheusEndpoint(*export.prometheus)
                readers.append(self.prometheus.reader)
            except OSError as exc:
                warn(f"warning: prometheus: cannot serve metrics on {export.prometheus[0]}:{export.prometheus[1]} "
                     f"({exc.strerror or exc}); the call goes on")
        self.provider = MeterProvider(resource=metrics_resource(resource), metric_readers=readers)

    def shutdown(self) -> None:
        try:
            self.provider.shutdown(timeout_millis=EXPORT_TIMEOUT_S * 2000)
        except Exception:
            log.debug("meter provider shutdown failed", exc_info=True)
        if self.prometheus is not None:
            self.prometheus.close()


class PrometheusEndpoint:
    """OpenTelemetry's Prometheus reader served at ``http://host:port/metrics`` from a registry of its own.

    ``scrapes`` counts collections, so a short-lived process can wait (``wait_for_scrape``) until
    Prometheus has taken its final numbers."""

    def __init__(self, host: str, port: int) -> None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry, start_http_server

        own = CollectorRegistry(auto_describe=False)  # not prometheus_client's global REGISTRY
        self.reader = PrometheusMetricReader(registry=own)
        self._cond = threading.Condition()
        self.scrapes = 0
        endpoint = self

        class _Counting:
            def collect(self):
                families = list(own.collect())
                with endpoint._cond:
                    endpoint.scrapes += 1
                    endpoint._cond.notify_all()
                return families

        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Counting())
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.host, self.port = host, self._server.server_port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def wait_for_scrape(self, after: int, timeout_s: float) -> bool:
        """True once a scrape beyond ``after`` (an earlier ``scrapes``) has happened, within ``timeout_s``."""
        with self._cond:
            return self._cond.wait_for(lambda: self.scrapes > after, timeout_s)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
