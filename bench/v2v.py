"""(a)/(b) Voice-to-voice of the reference pipeline on the sample calls, variants side by side.

Each variant is a set of PipelineConfig overrides (or ``capture=off``); runs are interleaved
(call 1: A B, call 2: A B, ...) so machine noise hits every variant alike. Reported per variant:
V2V p50/p95 from the spans (DESIGN.md's definition), the acoustic V2V (the scripted end of each
caller line → the bot's first audio in bot.wav; the only measure a capture-off run has), each
stage's p50, the first turn apart (cold start is a finding), and ratios against the first variant.

    .venv/bin/python bench/v2v.py --variant base --variant tuned:turn_stop_secs=1.0,tts_first_clause=true
    .venv/bin/python bench/v2v.py --overhead            # capture on vs off, acoustic V2V ratio
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "calls"
DEFAULT_CALLS = ("claim_status", "policy_question", "address_change")
STAGES = ("endpointing_ms", "asr_final_ms", "ttft_ms", "first_sentence_ms", "tts_ttfb_ms", "transport_ms")


@dataclass
class Variant:
    name: str
    overrides: dict = field(default_factory=dict)
    capture: bool = True
    event_rows: list = field(default_factory=list)  # turn_metrics rows (dicts)
    acoustic_ms: list = field(default_factory=list)
    first_turn_ms: list = field(default_factory=list)


def parse_variant(spec: str) -> Variant:
    name, _, settings = spec.partition(":")
    from voicetrace.run.options import parse_settings

    overrides = {}
    capture = True
    for item in filter(None, settings.split(",")):
        key, _, value = item.partition("=")
        if key == "capture":
            capture = value.strip().lower() not in ("false", "off")
        else:
            overrides.update(parse_settings([item]))  # the same KEY=VALUE rules as `voicetrace run --set`
    return Variant(name, overrides, capture)


def acoustic_v2v_ms(run_dir: Path, script: dict) -> list[float]:
    """Scripted end of each caller line → first bot audio after it (NaN: no answer before the next line)."""
    from voicetrace.run.folder import RunFolder

    bot, rate = sf.read(RunFolder(run_dir).bot_audio, dtype="int16")
    lines = script["lines"]
    out = []
    for i, line in enumerate(lines):
        start = int(line["speech_end_s"] * rate)
        stop = int(lines[i + 1]["speech_start_s"] * rate) if i + 1 < len(lines) else len(bot)
        voiced = np.flatnonzero(bot[start:stop])
        out.append(voiced[0] * 1000.0 / rate if len(voiced) else math.nan)
    return out


def pct(values, p):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.percentile(values, p)) if values else math.nan


def run_variant(variant: Variant, call: str, out_dir: Path, tail_s: float | None, samples: Path = SAMPLES) -> None:
    from voicetrace.analysis.turns import turn_metrics
    from voicetrace.run import RunOptions, run_call
    from voicetrace.traces.files import read_trace_files

    script = json.loads((samples / f"{call}.json").read_text())
    options = RunOptions(call_path=samples / f"{call}.wav", out_dir=out_dir, overrides=dict(variant.overrides),
                         capture=variant.capture, tail_s=tail_s)
    result = run_call(options)
    acoustic = acoustic_v2v_ms(result.run_dir, script)
    variant.acoustic_ms += acoustic
    variant.first_turn_ms.append(acoustic[0])
    if variant.capture:
        turns = turn_metrics(read_trace_files([result.trace_path]))
        variant.event_rows += turns.to_dict("records")


def fmt(value: float) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:,.0f}"


def report(variants: list[Variant]) -> None:
    base = variants[0]
    print(f"{'variant':<16} {'turns':>5} {'V2V p50':>8} {'p95':>6} {'acoustic p50':>12} {'p95':>6} {'1st turn':>8} "
          + " ".join(f"{s.replace('_ms', ''):>14}" for s in STAGES) + "   ratio p50 vs " + base.name)
    for v in variants:
        v2v = [r["v2v_ms"] for r in v.event_rows]
        stage_p50 = [pct([r.get(s, math.nan) for r in v.event_rows], 50) for s in STAGES]
        ratio = pct(v.acoustic_ms, 50) / pct(base.acoustic_ms, 50)
        print(f"{v.name:<16} {len(v.acoustic_ms):>5} {fmt(pct(v2v, 50)):>8} {fmt(pct(v2v, 95)):>6} "
              f"{fmt(pct(v.acoustic_ms, 50)):>12} {fmt(pct(v.acoustic_ms, 95)):>6} {fmt(pct(v.first_turn_ms, 50)):>8} "
              + " ".join(f"{fmt(x):>14}" for x in stage_p50) + f"   {ratio:.3f}")
    print("ms; V2V from spans (— when capture is off); acoustic = scripted line end → first bot audio in bot.wav;"
          " 1st turn = the call's first turn (cold-start finding); turns counted from the scripts.")


def main(argv: list[str] | None = None) -> list[Variant]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", default=",".join(DEFAULT_CALLS))
    parser.add_argument("--samples", type=Path, default=SAMPLES, help="folder with CALL.wav + CALL.json scripts")
    parser.add_argument("--variant", action="append", default=[], help="NAME[:key=value,...] (PipelineConfig overrides, capture=off)")
    parser.add_argument("--overhead", action="store_true", help="capture on vs off (fixed tail so both replay the same audio)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--tail-s", type=float, default=None)
    args = parser.parse_args(argv)
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    specs = args.variant or (["capture-on", "capture-off:capture=off"] if args.overhead else ["default"])
    variants = [parse_variant(s) for s in specs]
    tail_s = args.tail_s if args.tail_s is not None else (10.0 if args.overhead else None)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            for call in args.calls.split(","):
                order = variants if r % 2 == 0 else list(reversed(variants))  # ABBA against drift
                for v in order:
                    print(f"  run {r + 1}/{args.repeat} {call} {v.name}", file=sys.stderr, flush=True)
                    run_variant(v, call, Path(tmp), tail_s, args.samples)
    report(variants)
    return variants


if __name__ == "__main__":
    main()
