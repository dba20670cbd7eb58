"""Server-side request spans (vLLM / SGLang) under the client's ``llm`` span.

A server that traces exports its own request span into the turn's trace (it got our
``traceparent``), with durations such as ``gen_ai.latency.time_in_queue`` in seconds. Here each
such span is checked against the client's clock — it must sit inside the client ``llm`` span —
and, when it fits, queue / prefill / decode intervals are derived as ``llm.server.*`` children of
the client span, laid end to end from the server span's start. When it does not fit, the skew is
reported and nothing is drawn: the picture would be wrong.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.traces.tables import SpanTables

QUEUE_S = "gen_ai.latency.time_in_queue"
PREFILL_S = "gen_ai.latency.time_in_model_prefill"
DECODE_S = "gen_ai.latency.time_in_model_decode"
SKEW_TOLERANCE_NS = 1_000_000
"""Server and client stamps from two processes on one host agree to well under a millisecond."""

SKEW_COLUMNS = ["trace_id", "llm_span_id", "server_span_id", "skew_ms"]
SKEW_NOTE = "server_skew"
"""The note (SpanTables.notes) with one SKEW_COLUMNS row per server span that did not fit."""


def _seconds(attrs: dict, key: str) -> float:
    value = attrs.get(key) if isinstance(attrs, dict) else None
    return float(value) if isinstance(value, (int, float)) else 0.0


def derive_server_spans(tables: SpanTables) -> SpanTables:
    """Tables with derived ``llm.server.*`` spans added, and the ``server_skew`` note (one row per skewed
    server span; empty when every server span fits)."""
    spans = tables.spans
    is_server = spans["attributes"].map(lambda a: isinstance(a, dict) and QUEUE_S in a)
    empty = tables.replaced(notes={SKEW_NOTE: pd.DataFrame(columns=SKEW_COLUMNS)})
    if not is_server.any():
        return empty
    client = spans[spans["name"] == sc.SPAN_LLM][["trace_id", "span_id", "start_ns", "end_ns"]]
    server = spans[is_server].merge(
        client, left_on=["trace_id", "parent_span_id"], right_on=["trace_id", "span_id"], suffixes=("", "_client")
    )
    if server.empty:
        return empty
    early = server["start_ns_client"] - server["start_ns"]
    late = server["end_ns"] - server["end_ns_client"]
    skew_ns = np.maximum(early, late)
    skewed = skew_ns > SKEW_TOLERANCE_NS
    skews = pd.DataFrame({
        "trace_id": server.loc[skewed, "trace_id"],
        "llm_span_id": server.loc[skewed, "span_id_client"],
        "server_span_id": server.loc[skewed, "span_id"],
        "skew_ms": skew_ns[skewed] / 1e6,
    }).reset_index(drop=True)

    fits = server[~skewed]
    rows = []
    for name, key in ((sc.SPAN_LLM_QUEUE, QUEUE_S), (sc.SPAN_LLM_PREFILL, PREFILL_S), (sc.SPAN_LLM_DECODE, DECODE_S)):
        rows.append((name, key, (fits["attributes"].map(lambda a, k=key: _seconds(a, k)) * 1e9).astype("int64")))
    cursor = fits["start_ns"].to_numpy().copy()
    end_cap = fits["end_ns"].to_numpy()
    derived = []
    for name, key, duration in rows:
        start = cursor
        end = np.minimum(start + duration.to_numpy(), end_cap)
        derived.append(pd.DataFrame({
            "trace_id": fits["trace_id"].to_numpy(),
            "span_id": [f"{sid}.{name.rsplit('.', 1)[-1]}" for sid in fits["span_id"]],
            "parent_span_id": fits["span_id_client"].to_numpy(),
            "name": name,
            "start_ns": start,
            "end_ns": end,
            "attributes": [{key: _seconds(a, key), "voice.server.derived_from": sid}
                           for a, sid in zip(fits["attributes"], fits["span_id"])],
            "status_code": 0,
            "service": fits["service"].to_numpy(),
            "source": fits["source"].to_numpy(),
        }))
        cursor = end
    # A server that already reported these intervals itself keeps its own spans.
    have = spans[spans["name"].str.startswith("llm.server.")][["trace_id", "parent_span_id", "name"]]
    extra = pd.concat(derived, ignore_index=True)
    if len(have):
        known = set(map(tuple, have.to_numpy()))
        extra = extra[[(t, p, n) not in known for t, p, n in zip(extra["trace_id"], extra["parent_span_id"], extra["name"])]]
    merged = pd.concat([spans, extra[spans.columns]], ignore_index=True)
    return tables.replaced(merged, notes={SKEW_NOTE: skews})
