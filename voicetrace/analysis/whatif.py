"""What if one stage were faster? Recompute V2V along each turn's critical path.

Endpointing and ASR run side by side (the LLM waits for both: ready = max(turn decided, final
transcript)); everything after is a chain. Speeding a chain stage by X gains min(X, what it owned
on the critical path); speeding endpointing or ASR gains only as far as the other one allows.
Everything else is assumed unchanged (a what-if, not a simulation).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

NS_PER_MS = 1_000_000
CHAIN_STAGES = {
    "llm": ["bd_llm_queue_ms", "bd_llm_prefill_ms", "bd_llm_ttft_ms"],
    "queue": ["bd_llm_queue_ms"],
    "prefill": ["bd_llm_prefill_ms"],
    "tools": ["bd_tools_ms"],
    "first_sentence": ["bd_first_sentence_ms"],
    "tts": ["bd_tts_ttfb_ms"],
    "transport": ["bd_transport_ms"],
}
STAGES = ["endpointing", "asr", *CHAIN_STAGES]


def _rel_ms(turns: pd.DataFrame, col: str) -> np.ndarray:
    return (turns[col] - turns["user_end_ns"]).to_numpy(dtype="float64", na_value=np.nan) / NS_PER_MS


def whatif(turns: pd.DataFrame, stage: str, faster_ms: float) -> pd.DataFrame:
    """Per turn: v2v_ms, on_path_ms (what the stage owned), gain_ms, new_v2v_ms, present."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
    v2v = turns["v2v_ms"].to_numpy(dtype="float64")
    if stage in ("endpointing", "asr"):
        decided = _rel_ms(turns, "endpoint_end_ns")
        final = _rel_ms(turns, "asr_end_ns")
        asr_work = ((turns["asr_end_ns"] - turns["asr_start_ns"]).to_numpy(dtype="float64", na_value=np.nan)
                    / NS_PER_MS)
        ready = np.fmax(0, np.fmax(decided, final))
        if stage == "endpointing":
            present = np.isfinite(decided)
            decided = np.where(present, np.maximum(0, decided - faster_ms), decided)
        else:
            present = np.isfinite(final)
            final = np.where(present, final - np.minimum(faster_ms, np.nan_to_num(asr_work)), final)
        new_ready = np.fmax(0, np.fmax(decided, final))
        gain = np.where(present, np.clip(ready - new_ready, 0, None), 0.0)
        owned = turns["bd_endpointing_ms" if stage == "endpointing" else "bd_asr_final_ms"].to_numpy(dtype="float64")
    else:
        cols = CHAIN_STAGES[stage]
        parts = turns[cols].to_numpy(dtype="float64")
        present = np.isfinite(parts).any(axis=1)
        owned = np.where(present, np.nansum(np.nan_to_num(parts, nan=0.0), axis=1), np.nan)
        gain = np.where(present, np.minimum(faster_ms, np.nan_to_num(owned)), 0.0)
    gain = np.where(np.isfinite(v2v), np.minimum(gain, np.nan_to_num(v2v)), np.nan)
    return pd.DataFrame({
        "conversation": turns["conversation"].to_numpy(), "turn": turns["turn"].to_numpy(),
        "v2v_ms": v2v, "on_path_ms": owned, "gain_ms": gain, "new_v2v_ms": v2v - gain, "present": present,
    })
