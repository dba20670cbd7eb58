"""The speech-edge corpus as calls with truth: sample calls, calls of real human lines, noisy variants.

Everything here is deterministic (fixed seeds), so a test, the benchmark and the README quote the
same numbers. Truth comes from files, never from the detector under test:

- ``samples/calls/*.json``: each line's speech start/end as samples/make_samples.py measured it
  (10 ms frames over −40 dBFS of the clean synthesised line, placed exactly in the call);
- ``tests/data/edges/truth.json``: real human clips (alsa-utils' recordings) and Piper bot replies,
  measured at sample resolution on the clean source (tests/data/edges/make_edges_corpus.py).

Noisy variants add pink noise at a given SNR: speech power (over the truth's speech intervals) over
noise power, in dB, the usual definition for speech-in-noise tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples" / "calls"
EDGES = ROOT / "tests" / "data" / "edges"
RATE = 16_000
SNRS_DB = (20.0, 10.0)
SAMPLE_CALLS = ("claim_status", "policy_question", "barge_in", "address_change", "hindi_claim")
LEAD_IN_S = 1.0
GAP_S = 2.5
PAIR_PAUSE_S = 0.25


@dataclass
class Call:
    name: str
    audio: np.ndarray  # float32 mono at RATE
    lines: list[tuple[float, float]]  # truth (speech_start_s, speech_end_s) per caller turn
    kind: str = "clean"  # clean | snr20 | snr10
    corpus: str = "samples"  # samples | human
    notes: dict = field(default_factory=dict)


def _truth() -> dict:
    return json.loads((EDGES / "truth.json").read_text())


def sample_calls() -> list[Call]:
    calls = []
    for name in SAMPLE_CALLS:
        meta = json.loads((SAMPLES / f"{name}.json").read_text())
        audio, rate = sf.read(SAMPLES / meta["call"], dtype="float32")
        assert rate == RATE
        calls.append(Call(name, audio, [(ln["speech_start_s"], ln["speech_end_s"]) for ln in meta["lines"]]))
    return calls


def _clip(entry: dict) -> np.ndarray:
    """A corpus clip at 16 kHz. The human clips are not in the repository (alsa-utils' recordings are
    GPL-2): they are made here from the installed package exactly as make_edges_corpus.py made them."""
    if entry["file"].startswith("human/"):
        from tests.data.edges.make_edges_corpus import human_clip

        return human_clip(Path(entry["source"]).stem).astype(np.float32)
    audio, rate = sf.read(EDGES / entry["file"], dtype="float32")
    assert rate == RATE
    return audio


def _assemble(name: str, groups: list[list[str]], truth: dict) -> Call:
    """Lines of one or more clips (joined by PAIR_PAUSE_S of silence), GAP_S of silence between lines."""
    pieces, lines, cursor = [np.zeros(int(LEAD_IN_S * RATE), np.float32)], [], int(LEAD_IN_S * RATE)
    for group in groups:
        start = end = None
        for i, clip_name in enumerate(group):
            if i:
                pause = np.zeros(int(PAIR_PAUSE_S * RATE), np.float32)
                pieces.append(pause)
                cursor += len(pause)
            entry = truth[clip_name]
            clip = _clip(entry)
            if start is None:
                start = cursor / RATE + entry["speech_start_s"]
            end = cursor / RATE + entry["speech_end_s"]
            pieces.append(clip)
            cursor += len(clip)
        lines.append((start, end))
        gap = np.zeros(int(GAP_S * RATE), np.float32)
        pieces.append(gap)
        cursor += len(gap)
    return Call(name, np.concatenate(pieces), lines, corpus="human")


def human_calls() -> list[Call]:
    truth = _truth()["human"]
    clips = list(truth)
    singles = _assemble("human_lines", [[c] for c in clips], truth)
    # Two announcements per line with a short pause: one caller turn with a gap inside it.
    pairs = _assemble("human_pairs", [[clips[i], clips[(i + 3) % len(clips)]] for i in range(0, len(clips), 2)], truth)
    return [singles, pairs]


def pink_noise(n: int, seed: int) -> np.ndarray:
    """Unit-RMS pink (1/f power) noise, n samples, from a fixed seed."""
    rng = np.random.default_rng(seed)
    spectrum = rng.standard_normal(n // 2 + 1) + 1j * rng.standard_normal(n // 2 + 1)
    f = np.arange(n // 2 + 1, dtype=np.float64)
    f[0] = 1.0
    x = np.fft.irfft(spectrum / np.sqrt(f), n)
    return (x / np.sqrt(np.mean(x * x))).astype(np.float32)


def speech_power(call: Call) -> float:
    """Mean power of the call over its truth speech intervals."""
    parts = [call.audio[int(s * RATE):int(e * RATE)] for s, e in call.lines]
    x = np.concatenate(parts).astype(np.float64)
    return float(np.mean(x * x))


def with_noise(call: Call, snr_db: float, seed: int = 12) -> Call:
    noise = pink_noise(len(call.audio), seed) * np.sqrt(speech_power(call) / 10 ** (snr_db / 10))
    audio = np.clip(call.audio + noise, -1.0, 1.0).astype(np.float32)
    return Call(call.name, audio, call.lines, kind=f"snr{snr_db:g}", corpus=call.corpus,
                notes={"noise_dbfs": round(10 * np.log10(np.mean(noise.astype(np.float64) ** 2)), 1)})


def clean_calls() -> list[Call]:
    return sample_calls() + human_calls()


def all_calls() -> list[Call]:
    clean = clean_calls()
    return clean + [with_noise(c, snr) for snr in SNRS_DB for c in clean]


@dataclass
class BotReply:
    name: str
    audio: np.ndarray  # float32 mono at RATE, as the output transport plays it
    onset_s: float  # first audible sample, from the start of the reply


def bot_replies() -> list[BotReply]:
    return [BotReply(name, _clip(entry), entry["onset_s"]) for name, entry in _truth()["bot"].items()]


def pcm16(x: np.ndarray) -> bytes:
    return (np.clip(x, -1.0, 1.0) * 32767).round().astype("<i2").tobytes()
