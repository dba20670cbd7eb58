"""Prompt tokens and KV-cache bytes per turn as the conversation grows.

bytes per token = 2 (K and V) × layers × KV heads × head size × bytes per value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.analysis.turns import KEY
from voicetrace.traces.tables import SpanTables

SPAN_SERVER_PREFILL = sc.SPAN_LLM_PREFILL


@dataclass(frozen=True)
class ModelShape:
    layers: int
    kv_heads: int
    head_dim: int
    bytes_per_value: int = 2
    source: str = "given"

    @property
    def bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_value

    def to_dict(self) -> dict:
        return {"layers": self.layers, "kv_heads": self.kv_heads, "head_dim": self.head_dim,
                "bytes_per_value": self.bytes_per_value, "bytes_per_token": self.bytes_per_token,
                "source": self.source}


def parse_shape(text: str) -> ModelShape:
    """``LAYERS,KV_HEADS,HEAD_DIM[,BYTES_PER_VALUE]`` → ModelShape; ValueError with a clear message."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (3, 4) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"--model-shape wants LAYERS,KV_HEADS,HEAD_DIM[,BYTES_PER_VALUE] (positive integers), not {text!r}")
    nums = [int(p) for p in parts]
    return ModelShape(*nums[:3], bytes_per_value=nums[3] if len(nums) == 4 else 2)


def prompt_tokens(turns: pd.DataFrame, tables: SpanTables) -> np.ndarray:
    """Prompt tokens per turn: gen_ai.usage.input_tokens on llm, else the server's prefill
    ``prompt_n + cache_n`` (tokens computed + tokens reused from the cache); NaN when unknown."""
    result = pd.to_numeric(pd.Series(turns["input_tokens"].to_numpy(), dtype=object), errors="coerce").to_numpy(dtype="float64")
    spans = tables.spans
    pre = spans[spans["name"] == SPAN_SERVER_PREFILL]
    if pre.empty or not np.isnan(result).any():
        return result
    llm = spans[spans["name"] == sc.SPAN_LLM][["trace_id", "span_id", "parent_span_id"]].rename(
        columns={"span_id": "llm_id", "parent_span_id": "turn_span_id"})
    pre = pre.merge(llm, left_on=["trace_id", "parent_span_id"], right_on=["trace_id", "llm_id"])
    counts = [_suffix(a, "prompt_n") + _suffix(a, "cache_n") for a in pre["attributes"]]
    per_turn = pd.Series(counts, index=pd.MultiIndex.from_frame(pre[KEY]), dtype="float64")
    per_turn = per_turn[per_turn > 0].groupby(level=[0, 1]).max()
    server = per_turn.reindex(pd.MultiIndex.from_frame(turns[KEY])).to_numpy()
    return np.where(np.isnan(result), server, result)


def _suffix(attrs: dict, suffix: str) -> float:
    for key, value in (attrs or {}).items():
        if key == suffix or key.endswith("." + suffix):
            try:
                return float(value)
            except (TypeError, ValueError):
                return 0.0
    return 0.0


def kv_bytes(prompt: np.ndarray, output_tokens, shape: ModelShape | None) -> np.ndarray:
    """KV-cache bytes held at the end of each turn's generation: (prompt + output tokens) × bytes/token."""
    if shape is None:
        return np.full(len(prompt), np.nan)
    out = pd.to_numeric(pd.Series(list(output_tokens), dtype=object), errors="coerce").fillna(0).to_numpy(dtype="float64")
    return (prompt + out) * shape.bytes_per_token
