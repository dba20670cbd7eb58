"""(e) Loop-lag monitor cost: process CPU time with the monitor on vs off, side by side in one run.

Each round runs the same event loop for the same wall time twice, monitor off then on, and reads
the process's CPU time (``time.process_time``: every thread) around each; the difference divided
by the wall time is the monitor's share of one core. Two loads: an idle loop, and a loop that does
2 ms of work every 20 ms (a pipeline's audio cadence), where the monitor's wakes interleave with
the work. Goal (issue 12): ≤ 1 % of one core.

    .venv/bin/python bench/loop_lag_cost.py [--seconds 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from voicetrace.capture.loop_lag import LoopLagMonitor
from voicetrace.clock import RunClock


async def _work(stop: asyncio.Event) -> None:
    """2 ms of CPU every 20 ms, paced against absolute deadlines like the file transport."""
    start = time.monotonic_ns()
    k = 0
    while not stop.is_set():
        k += 1
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass
        delay = start + k * 20_000_000 - time.monotonic_ns()
        await asyncio.sleep(max(0, delay) / 1e9)


async def _window(seconds: float, monitor_on: bool, busy: bool) -> tuple[float, int]:
    stop = asyncio.Event()
    worker = asyncio.create_task(_work(stop)) if busy else None
    monitor = LoopLagMonitor(RunClock())
    cpu0 = time.process_time()
    if monitor_on:
        monitor.start()
    await asyncio.sleep(seconds)
    await monitor.stop()
    stop.set()
    if worker is not None:
        await worker
    return time.process_time() - cpu0, monitor.stats.ticks


def measure(seconds: float, rounds: int, busy: bool) -> dict:
    off, on, ticks = [], [], []
    for _ in range(rounds):
        cpu, _ = asyncio.run(_window(seconds, False, busy))
        off.append(cpu)
        cpu, n = asyncio.run(_window(seconds, True, busy))
        on.append(cpu)
        ticks.append(n)
    extra = statistics.median(b - a for a, b in zip(off, on))
    return {
        "off_core_pct": 100 * statistics.median(off) / seconds,
        "on_core_pct": 100 * statistics.median(on) / seconds,
        "overhead_core_pct": 100 * extra / seconds,
        "us_per_tick": 1e6 * extra / max(1, statistics.median(ticks)),
        "ticks_per_s": statistics.median(ticks) / seconds,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    out = {}
    print("(e) loop-lag monitor cost (10 ms tick), goal: <= 1 % of one core")
    print(f"  {'load':<22} {'off':>8} {'on':>8} {'monitor':>9} {'per tick':>10} {'ticks/s':>8}")
    for name, busy in (("idle loop", False), ("2 ms work / 20 ms", True)):
        r = measure(args.seconds, args.rounds, busy)
        out["busy" if busy else "idle"] = r
        print(f"  {name:<22} {r['off_core_pct']:7.2f}% {r['on_core_pct']:7.2f}% {r['overhead_core_pct']:8.2f}% "
              f"{r['us_per_tick']:8.1f} µs {r['ticks_per_s']:8.1f}")
    return out


if __name__ == "__main__":
    main()
