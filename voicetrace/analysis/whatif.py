"""What if one stage were faster? Recompute V2V along each turn's critical path.

Endpointing and ASR run side by side (the LLM waits for both: ready = max(turn decided, final
transcript)); everything after is a chain. Speeding a chain stage by X gains min(X, what it owned
on the critical path); speeding endpointing or ASR gains only as far as the other one allows.
Everything else is assumed unchanged (a what-if, not a simulation).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from voicetrace.analysis.metrics import WHATIF
from voicetrace.analysis.turns import NS_PER_MS

STAGES = list(WHATIF)
"""The ``--stage`` names (metrics.Metric.whatif), in chain order."""
PARALLEL = ("endpointing", "asr_final")
"""Metrics that run side by side before the LLM request; the rest is a chain."""


def _rel_ms(turns: pd.DataFrame, col: str) -> np.ndarray:
    return (turns[col] - turns["user_end_ns"]).to_numpy(dtype="float64", na_value=np.nan) / NS_PER_MS


def whatif(turns: pd.DataFrame, stage: str, faster_ms: float) -> pd.DataFrame:
    """Per turn: v2v_ms, on_path_ms (what the stage owned), gain_ms, new_v2v_ms, present."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
    metric = WHATIF[stage]
    v2v = turns["v2v_ms"].to_numpy(dtype="float64")
    if metric.key in PARALLEL:
        decided = _rel_ms(turns, "endpoint_end_ns")
        final = _rel_ms(turns, "asr_end_ns")
        asr_work = ((turns["asr_end_ns"] - turns["asr_start_ns"]).to_numpy(dtype="float64", na_value=np.nan)
                    / NS_PER_MS)
        ready = np.fmax(0, np.fmax(decided, final))
        if metric.key == "endpointing":
            present = np.isfinite(decided)
            decided = np.where(present, np.maximum(0, decided - faster_ms), decided)
        else:
            present = np.isfinite(final)
            final = np.where(present, final - np.minimum(faster_ms, np.nan_to_num(asr_work)), final)
        new_ready = np.fmax(0, np.fmax(decided, final))
        gain = np.where(present, np.clip(ready - new_ready, 0, None), 0.0)
        owned = turns[metric.segment_column].to_numpy(dtype="float64")
    else:
        parts = turns[metric.whatif_columns].to_numpy(dtype="float64")
        present = np.isfinite(parts).any(axis=1)
        owned = np.where(present, np.nansum(np.nan_to_num(parts, nan=0.0), axis=1), np.nan)
        gain = np.where(present, np.minimum(faster_ms, np.nan_to_num(owned)), 0.0)
    gain = np.where(np.isfinite(v2v), np.minimum(gain, np.nan_to_num(v2v)), np.nan)
    return pd.DataFrame({
        "conversation": turns["conversation"].to_numpy(), "turn": turns["turn"].to_numpy(),
        "v2v_ms": v2v, "on_path_ms": owned, "gain_ms": gain, "new_v2v_ms": v2v - gain, "present": present,
    })
