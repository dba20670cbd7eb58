"""(c) Report at scale: `voicetrace report --json` on a 10,000-turn trace against a raw parse of the
same file with a fast JSON parser (orjson), side by side in one run: wall time and peak memory of
each (separate processes, peak RSS from the kernel), then the HTML report of the same set.

    .venv/bin/python bench/report_scale.py [--calls 1000] [--turns 10] [--tokens 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from make_big_trace import make_trace  # noqa: E402

RAW_PARSE = "import orjson, sys\nwith open(sys.argv[1], 'rb') as f:\n    rows = [orjson.loads(line) for line in f]\n"


def measure(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-500:]}")
    return wall, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=60)
    args = parser.parse_args(argv)
    voicetrace = str(Path(sys.executable).parent / "voicetrace")
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "big.jsonl"
        info = make_trace(trace, args.calls, args.turns, args.tokens)
        raw_s, raw_mb = measure([sys.executable, "-c", RAW_PARSE, str(trace)])
        json_s, json_mb = measure([voicetrace, "report", str(trace), "--json"])
        html_s, html_mb = measure([voicetrace, "report", str(trace), "-o", str(Path(tmp) / "r.html")])
        html_size = (Path(tmp) / "r.html").stat().st_size
    print(f"(c) report at scale: {info['turns']:,} turns, {info['spans']:,} spans + {info['events']:,} events, "
          f"{info['bytes'] / 1e6:.0f} MB of OTLP JSON")
    print(f"  raw orjson parse    {raw_s:6.2f} s  {raw_mb:7.0f} MB peak")
    print(f"  report --json       {json_s:6.2f} s  {json_mb:7.0f} MB peak   {json_s / raw_s:4.2f}x raw parse (goal <= 2x, <= 2048 MB)")
    print(f"  report -o html      {html_s:6.2f} s  {html_mb:7.0f} MB peak   {html_s / raw_s:4.2f}x raw parse, {html_size / 1e6:.1f} MB file")
    return {"raw_s": raw_s, "raw_mb": raw_mb, "json_s": json_s, "json_mb": json_mb, "html_s": html_s, "html_mb": html_mb,
            "ratio": json_s / raw_s, **info}


if __name__ == "__main__":
    main()
