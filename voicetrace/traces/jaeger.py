"""Jaeger's query API → the same SpanTables as trace files, so reports are identical.

Jaeger ≥ 1.5x serves the api/v3 HTTP endpoints, which return OTLP JSON (``{"result":
{"resourceSpans": ...}}``) with nanosecond times; older ones only the UI's ``/api/traces`` JSON
(microseconds, tags and logs), which ``jaeger_json`` decodes. Searches page backwards in time, at most
``page_traces`` traces per request and ``limit`` in all, so a busy service can't blow memory.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterator

import httpx
import orjson

from voicetrace.errors import EXIT_RUNTIME, UsageError
from voicetrace.traces import jaeger_json
from voicetrace.traces.files import TraceInputError
from voicetrace.traces.otlp_json import decode_request
from voicetrace.traces.tables import Rows, SpanTables

API_V3 = "v3"
API_LEGACY = "legacy"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class JaegerQueryError(TraceInputError):
    """Nothing to report (no such service, trace or traces); one line for the user."""


class JaegerUnreachableError(JaegerQueryError):
    """Jaeger's query API did not answer: a runtime failure, not bad input."""

    exit_code = EXIT_RUNTIME


def parse_since_s(text: str) -> float:
    """``90s``, ``15m``, ``1h``, ``2d``, ``1w`` → seconds."""
    match = _DURATION.match(text or "")
    if not match:
        raise UsageError(f"--since {text!r}: use a number and a unit, like 30m, 1h or 2d")
    return float(match.group(1)) * _SECONDS[match.group(2)]


@dataclass
class JaegerSource:
    base_url: str
    timeout_s: float = 10.0
    api: str | None = None
    """API_V3, API_LEGACY, or None to find out (v3 when the server has it)."""
    transport: httpx.BaseTransport | None = None
    """httpx's default, or e.g. an ``httpx.MockTransport`` that answers like Jaeger (tests)."""

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        if "://" not in self.base_url:
            self.base_url = "http://" + self.base_url
        self._client = httpx.Client(timeout=self.timeout_s, transport=self.transport)

    def close(self) -> None:
        self._client.close()

    # --- public ---------------------------------------------------------------------------
    def read(self, service: str | None = None, since_s: float = 3600.0, trace_ids: list[str] | None = None,
             limit: int = 20, page_traces: int = 10) -> SpanTables:
        rows = Rows()
        if trace_ids:
            for trace_id in trace_ids:
                self._add(self._get_trace(trace_id), rows)
        else:
            self._check_service(service)
            found = 0
            for page in self._find_pages(service, since_s, limit, page_traces):
                found += self._add(page, rows)
            if not found:
                raise JaegerQueryError(
                    f"no traces of service {service!r} in the last {_human(since_s)} in Jaeger at {self.base_url}"
                )
        return rows.tables()

    # --- API detection and errors ---------------------------------------------------------
    def _get(self, path: str, params: dict | None = None) -> httpx.Response:
        url = self.base_url + path
        try:
            return self._client.get(url, params=params)
        except httpx.HTTPError as exc:
            raise JaegerUnreachableError(f"Jaeger at {self.base_url} is not reachable ({type(exc).__name__})") from None

    def _json(self, response: httpx.Response) -> dict:
        try:
            data = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise JaegerQueryError(
                f"{response.request.url} answered HTTP {response.status_code} with something that is not JSON: "
                "is this Jaeger's query port (16686)?"
            ) from None
        if not isinstance(data, dict):
            raise JaegerQueryError(f"{response.request.url}: unexpected JSON ({type(data).__name__})")
        return data

    def _api(self) -> str:
        if self.api is None:
            response = self._get("/api/v3/services")
            self.api = API_V3 if response.status_code == 200 else API_LEGACY
        return self.api

    def _check_service(self, service: str) -> None:
        if self._api() == API_V3:
            response = self._get("/api/v3/services")
            services = self._json(response).get("services") or []
        else:
            response = self._get("/api/services")
            if response.status_code != 200:
                raise JaegerQueryError(f"{self.base_url} does not answer like Jaeger's query API (HTTP {response.status_code})")
            services = self._json(response).get("data") or []
        if service not in services:
            known = ", ".join(sorted(services)) or "none"
            raise JaegerQueryError(f"service {service!r} has no traces in Jaeger at {self.base_url} (services: {known})")

    # --- fetching ---------------------------------------------------------------------------
    def _get_trace(self, trace_id: str) -> list[dict]:
        trace_id = trace_id.strip().lower()
        if self._api() == API_V3:
            response = self._get(f"/api/v3/traces/{trace_id}", {"raw_traces": "true"})
        else:
            response = self._get(f"/api/traces/{trace_id}", {"raw": "true"})
        if response.status_code == 404 or (response.status_code == 200 and not _has_spans(self._json(response))):
            raise JaegerQueryError(f"trace {trace_id} not found in Jaeger at {self.base_url}")
        if response.status_code != 200:
            raise JaegerQueryError(f"Jaeger at {self.base_url}: HTTP {response.status_code} for trace {trace_id}: {_message(response)}")
        return [self._json(response)]

    def _find_pages(self, service: str, since_s: float, limit: int, page_traces: int) -> Iterator[list[dict]]:
        """Pages of traces, newest first; each page ends where the last one's oldest trace began."""
        end_ns = time.time_ns()
        start_ns = end_ns - int(since_s * 1e9)
        seen: set[str] = set()
        while len(seen) < limit and end_ns > start_ns:
            want = min(page_traces, limit - len(seen))
            payload = self._search(service, start_ns, end_ns, want)
            traces = _split_by_trace(payload, self._api())
            new = {tid: body for tid, body in traces.items() if tid not in seen}
            if not new:
                return
            seen.update(new)
            yield list(new.values())
            oldest_ns = min(_trace_start_ns(body, self._api()) for body in new.values())
            if len(traces) < want or oldest_ns <= start_ns:
                return
            end_ns = oldest_ns - 1_000 if self._api() == API_LEGACY else oldest_ns - 1

    def _search(self, service: str, start_ns: int, end_ns: int, want: int) -> dict:
        if self._api() == API_V3:
            response = self._get("/api/v3/traces", {
                "query.service_name": service,
                "query.start_time_min": _rfc3339(start_ns),
                "query.start_time_max": _rfc3339(end_ns),
                "query.num_traces": want,
                "query.raw_traces": "true",
            })
        else:
            response = self._get("/api/traces", {
                "service": service, "start": start_ns // 1000, "end": end_ns // 1000, "limit": want, "raw": "true",
            })
        if response.status_code == 404:
            return {}
        if response.status_code != 200:
            raise JaegerQueryError(f"Jaeger at {self.base_url}: HTTP {response.status_code} searching {service!r}: {_message(response)}")
        return self._json(response)

    def _add(self, payloads: list[dict], rows: Rows) -> int:
        """Rows from API payloads (v3 or legacy); returns how many traces they held."""
        count = 0
        source = f"jaeger:{self.base_url}"
        for payload in payloads:
            if self._api() == API_V3:
                request = payload.get("result", payload)
                rows.skip(source, 1, decode_request(request, source, rows.spans, rows.events))
                count += len({s.get("traceId") for rs in request.get("resourceSpans", []) or []
                              for ss in rs.get("scopeSpans", []) or [] for s in ss.get("spans", []) or []})
            else:
                rows.skip(source, 1, jaeger_json.decode_document(payload, source, rows.spans, rows.events))
                count += len(payload.get("data", []) or [])
        return count


# --- helpers ------------------------------------------------------------------------------


def _rfc3339(ns: int) -> str:
    seconds, rest = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{rest:09d}Z"


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _message(response: httpx.Response) -> str:
    try:
        data = orjson.loads(response.content)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):
            return str(error.get("message", ""))[:200]
        errors = data.get("errors") if isinstance(data, dict) else None
        if errors:
            return str(errors[0].get("msg", errors[0]))[:200]
    except (orjson.JSONDecodeError, AttributeError, IndexError):
        pass
    return response.text.strip().splitlines()[0][:200] if response.text.strip() else ""


def _has_spans(payload: dict) -> bool:
    if "result" in payload:
        return bool((payload["result"] or {}).get("resourceSpans"))
    return bool(payload.get("data"))


def _split_by_trace(payload: dict, api: str) -> dict[str, dict]:
    """One payload per trace id, in the API's own shape."""
    out: dict[str, dict] = {}
    if api == API_LEGACY:
        for trace in payload.get("data", []) or []:
            out[trace.get("traceID", "")] = {"data": [trace]}
        return out
    for resource_spans in (payload.get("result") or {}).get("resourceSpans", []) or []:
        for scope_spans in resource_spans.get("scopeSpans", []) or []:
            by_trace: dict[str, list] = {}
            for span in scope_spans.get("spans", []) or []:
                by_trace.setdefault(span.get("traceId", ""), []).append(span)
            for trace_id, trace_spans in by_trace.items():
                body = out.setdefault(trace_id, {"result": {"resourceSpans": []}})
                body["result"]["resourceSpans"].append({
                    "resource": resource_spans.get("resource", {}),
                    "scopeSpans": [{"scope": scope_spans.get("scope", {}), "spans": trace_spans}],
                })
    return out


def _trace_start_ns(body: dict, api: str) -> int:
    if api == API_LEGACY:
        return min(int(s.get("startTime", 0)) for t in body["data"] for s in t.get("spans", [])) * 1000
    return min(
        int(s.get("startTimeUnixNano", 0))
        for rs in body["result"]["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
    )


def read_jaeger(base_url: str, service: str | None = None, since_s: float = 3600.0,
                trace_ids: list[str] | None = None, limit: int = 20, api: str | None = None,
                page_traces: int = 10, transport: httpx.BaseTransport | None = None) -> SpanTables:
    """Spans of the newest ``limit`` traces of ``service`` (or of ``trace_ids``) from Jaeger (raw: the
    report pipeline normalises them like any other source)."""
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, not {limit}")
    if trace_ids is not None and not all(t.strip() for t in trace_ids):
        raise UsageError("--trace-id needs a trace id (32 hex digits)")
    if not trace_ids and not service:
        raise UsageError("--jaeger needs --service NAME (or --trace-id ID)")
    source = JaegerSource(base_url, api=api, transport=transport)
    try:
        return source.read(service, since_s, trace_ids, limit, page_traces)
    finally:
        source.close()
