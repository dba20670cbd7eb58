"""TTFT on the wire and the LLM's delivery lag per turn, from the ``llm`` span that carried the turn's
first token (attributes written by ``capture.wire``; traces without them give NaN)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.analysis.turns import stage_spans
from voicetrace.traces.tables import SpanTables

WIRE_COLUMNS = {"ttft_wire_ms": sc.ATTR_LLM_TTFT_WIRE_MS, "llm_delivery_lag_ms": sc.ATTR_LLM_DELIVERY_LAG_MS}


def per_turn(turns: pd.DataFrame, tables: SpanTables) -> pd.DataFrame:
    out = pd.DataFrame({col: np.full(len(turns), np.nan) for col in WIRE_COLUMNS})
    spans = tables.spans
    llm = spans[spans["name"] == sc.SPAN_LLM]
    if not len(turns) or llm.empty or not any(isinstance(a, dict) and sc.ATTR_LLM_TTFT_WIRE_MS in a
                                              for a in llm["attributes"]):
        return out
    kids = stage_spans(llm, turns.rename(columns={"turn_span_id": "span_id"}))
    first = {(t, s, int(st)): a for t, s, st, a in zip(kids["trace_id"], kids["turn_span_id"], kids["start_ns"],
                                                       kids["attributes"])}
    for row, key in enumerate(zip(turns["trace_id"], turns["turn_span_id"], turns["first_token_llm_start_ns"])):
        if pd.isna(key[2]):
            continue
        attrs = first.get((key[0], key[1], int(key[2])))
        if isinstance(attrs, dict):
            for col, attr in WIRE_COLUMNS.items():
                if attrs.get(attr) is not None:
                    out.at[row, col] = float(attrs[attr])
    return out
