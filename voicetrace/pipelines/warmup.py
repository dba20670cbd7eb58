"""Warm every model before the call starts, so the first turn is not a cold start.

Runs after the pipeline has started (models loaded) and before call time zero. Each step is
timed; run.json records the times. A cold first turn is a finding worth showing: with
``warmup=False`` the first turn pays for it, and the benchmark reports it separately.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import numpy as np


WARMUP_HEADER = "X-Voicetrace-Warmup"


def _ms_since(start_ns: int) -> float:
    return round((time.monotonic_ns() - start_ns) / 1e6, 1)


async def _llm(base_url: str, model: str, messages: list[dict]) -> None:
    # The same prefix the first turn will send (system prompt, caller's policy): llama.cpp's
    # prompt cache then serves it instead of prefilling it inside the caller's wait.
    async with httpx.AsyncClient(timeout=60) as client:
        # Marked, so a server's logs (and our tests) can tell it from the call's own requests.
        await client.post(f"{base_url}/chat/completions", headers={WARMUP_HEADER: "1"}, json={
            "model": model, "messages": messages + [{"role": "user", "content": "Hello."}],
            "max_tokens": 1, "temperature": 0, "stream": False,
        })


def _asr(model, language: str) -> None:
    noise = (np.random.default_rng(0).standard_normal(16_000) * 0.01).astype(np.float32)
    segments, _ = model.transcribe(noise, language=language, beam_size=1, word_timestamps=True)
    list(segments)


def _tts(voice) -> None:
    for _ in voice.synthesize("Hello, thanks for calling."):
        pass


def _turn(analyzer) -> None:
    analyzer._predict_endpoint(np.zeros(16_000 * 2, dtype=np.float32))


async def warm_up(reference, config) -> dict[str, float]:
    """Warm the LLM, ASR, TTS and turn model; returns milliseconds per step (skipped if absent)."""
    took: dict[str, float] = {}
    messages = [{"role": "system", "content": config.system_prompt}]
    messages += [m for m in reference.context.get_messages() if isinstance(m, dict) and m.get("role") == "system"]
    steps = [
        ("llm", lambda: _llm(config.llm_base_url, config.llm_model, messages)),
        ("asr", (lambda m=getattr(reference.stt, "_model", None): asyncio.to_thread(_asr, m, config.asr_language))
         if getattr(reference.stt, "_model", None) is not None else None),
        ("tts", (lambda v=getattr(reference.tts, "_voice", None): asyncio.to_thread(_tts, v))
         if getattr(reference.tts, "_voice", None) is not None else None),
        ("turn", (lambda a=reference.turn_analyzer: asyncio.to_thread(_turn, a))
         if hasattr(reference.turn_analyzer, "_predict_endpoint") else None),
    ]
    for name, step in steps:
        if step is None:
            continue
        start = time.monotonic_ns()
        try:
            await step()
        except Exception as exc:  # a failed warm-up only costs the first turn some time
            took[f"{name}_error"] = str(exc)[:200]
        took[name] = _ms_since(start)
    return took
