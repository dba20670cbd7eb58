"""(d) Timing accuracy: voicetrace's client-side TTFT and inter-token gaps against a real local
HTTP server that streams OpenAI-format chunks with injected delays, and a tool with an injected
duration. Truth is what the server actually did (its own monotonic stamps, same host clock), so
scheduler jitter in the server does not count against the measurement.

Two stamps per chunk are compared: on the wire (its bytes read from the socket, the request's body
written to it: ``capture.wire``) and as delivered (the openai SDK hands the chunk to pipecat). Each
is measured idle and with a CPU-burning neighbour process, side by side in one run.

    .venv/bin/python bench/timing_accuracy.py [--requests 20] [--tokens 30] [--no-load]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from voicetrace.capture.llm_stream import LLMCall, instrument_openai_llm
from voicetrace.servers.llama import free_loopback_port
from voicetrace.tools.runner import run_tool

MS = 1e6


class CollectingSink:
    """Stands in for the observer: keeps every call the instrumented service reports."""

    def __init__(self) -> None:
        self.calls: list[LLMCall] = []

    def begin_llm_call(self, prepare_ns: int) -> LLMCall:
        call = LLMCall(request_ns=prepare_ns, prepare_ns=prepare_ns)
        self.calls.append(call)
        return call

    def llm_request_sent(self, call: LLMCall, request_ns: int) -> str:
        call.request_ns = request_ns
        return "00-" + "1" * 32 + "-" + "2" * 16 + "-01"

    def end_llm_call(self, call: LLMCall) -> None:
        pass


def start_server_process(script: dict, tmp: Path) -> tuple[subprocess.Popen, str]:
    """The scripted server in its own process, as a real LLM server would be."""
    path = tmp / "script.json"
    path.write_text(json.dumps(script))
    port = free_loopback_port()
    proc = subprocess.Popen([sys.executable, "-m", "voicetrace.servers.scripted_llm", "--port", str(port),
                             "--script", str(path)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    proc.stdout.readline()  # "scripted LLM server on ...": it is listening
    return proc, f"http://127.0.0.1:{port}/v1"


async def measure_llm(n_requests: int, n_tokens: int, seed: int) -> dict:
    import httpx
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.services.openai.llm import OpenAILLMService

    rng = random.Random(seed)
    replies = [{"text": "warm up", "ttft_ms": 10, "itl_ms": 5}]
    for _ in range(n_requests):
        replies.append({"text": " ".join(f"w{k}" for k in range(n_tokens)), "ttft_ms": rng.uniform(50, 300),
                        "itl_ms": [rng.uniform(5, 60) for _ in range(n_tokens)]})
    with tempfile.TemporaryDirectory() as tmp:
        proc, base_url = start_server_process({"replies": replies, "sequential": True}, Path(tmp))
        try:
            llm = OpenAILLMService(api_key="x", base_url=base_url, settings=OpenAILLMService.Settings(model="m"))
            sink = CollectingSink()
            instrument_openai_llm(llm, sink)
            for _ in range(n_requests + 1):  # the first request opens the connection: not counted
                stream = await llm.get_chat_completions(LLMContext(messages=[{"role": "user", "content": "hi"}]))
                async for _ in stream:
                    pass
                await stream.close()
            recorded = httpx.get(base_url.replace("/v1", "/recorded")).json()
        finally:
            proc.terminate()
            proc.wait(10)
    errors_ttft, errors_itl, wire_ttft, wire_itl, lag = [], [], [], [], []
    for call, sent in list(zip(sink.calls, recorded))[1:]:
        # TTFT truth: the server's first content write − its receipt of the request. The client
        # measures request sent → first content received; the difference is the measurement error
        # (loopback transit both ways plus our own stamping).
        true_ttft = (sent["content_sent_ns"][0] - sent["received_ns"]) / MS
        errors_ttft.append(abs((call.first_token_ns - call.request_ns) / MS - true_ttft))
        sent_ns = sent["content_sent_ns"]
        true_gaps = [(b - a) / MS for a, b in zip(sent_ns, sent_ns[1:])]
        got_gaps = [(b - a) / MS for a, b in zip(call.token_times_ns, call.token_times_ns[1:])]
        assert len(true_gaps) == len(got_gaps), (len(true_gaps), len(got_gaps))
        errors_itl += [abs(g - t) for g, t in zip(got_gaps, true_gaps)]
        reads = call.token_wire_ns
        assert call.wire is not None and len(reads) == len(call.token_times_ns), "wire stamps missing"
        wire_ttft.append(abs((reads[0] - call.wire.request_ns) / MS - true_ttft))
        wire_itl += [abs((b - a) / MS - t) for a, b, t in zip(reads, reads[1:], true_gaps)]
        lag += [(t - r) / MS for t, r in zip(call.token_times_ns, reads)]
    q = statistics.quantiles
    return {"requests": n_requests, "tokens_per_request": n_tokens,
            "wire_ttft_err_max_ms": max(wire_ttft), "wire_ttft_err_p50_ms": statistics.median(wire_ttft),
            "wire_itl_err_max_ms": max(wire_itl), "wire_itl_err_p50_ms": statistics.median(wire_itl),
            "wire_itl_err_p99_ms": q(wire_itl, n=100)[98], "itl_err_p99_ms": q(errors_itl, n=100)[98],
            "delivery_lag_p50_ms": statistics.median(lag), "delivery_lag_max_ms": max(lag),
            "ttft_err_max_ms": max(errors_ttft), "ttft_err_p50_ms": statistics.median(errors_ttft),
            "itl_err_max_ms": max(errors_itl), "itl_err_p50_ms": statistics.median(errors_itl),
            "gaps": len(errors_itl)}


class SleepyTools:
    """A tool whose duration is injected; it stamps its own start and end."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int]] = []

    def wait(self, ms: float) -> dict:
        start = time.monotonic_ns()
        deadline = start + int(ms * MS)
        while time.monotonic_ns() < deadline:
            time.sleep(max(0.0, (deadline - time.monotonic_ns()) / 1e9 / 2))
        self.runs.append((start, time.monotonic_ns()))
        return {"ok": True}


class ToolSink:
    def __init__(self) -> None:
        self.runs = []

    def begin_tool(self, name, arguments, trigger, start_ns):
        from voicetrace.capture.turn_record import ToolRun

        run = ToolRun(name=name, start_ns=start_ns, arguments=arguments, trigger=trigger)
        self.runs.append(run)
        return run


async def measure_tool(n: int, seed: int) -> dict:
    rng = random.Random(seed)
    tools, sink, errors = SleepyTools(), ToolSink(), []
    await run_tool(tools, None, "wait", {"ms": 1}, "intent")  # starts the worker thread: not counted
    for _ in range(n):
        await run_tool(tools, sink, "wait", {"ms": rng.uniform(5, 200)}, "intent")
        span = sink.runs[-1]
        start, end = tools.runs[-1]
        # The tool stamps its own start and end; the span's stamps are taken around it.
        errors.append(abs((span.end_ns - span.start_ns) - (end - start)) / MS)
    return {"tool_runs": n, "tool_err_max_ms": max(errors), "tool_err_p50_ms": statistics.median(errors)}


def quiet_logs() -> None:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


class CpuNeighbour:
    """A plain CPU loop in its own process, beside the measurement (one of the machine's cores busy)."""

    def __enter__(self) -> "CpuNeighbour":
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait(10)


def _row(name: str, llm: dict, key: str) -> str:
    return (f"  {name:<26} {llm[key + '_err_p50_ms']:8.3f} {llm[key + '_err_max_ms']:9.3f}"
            + (f" {llm[key + '_err_p99_ms']:9.3f}" if key + "_err_p99_ms" in llm else f" {'':9}"))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--tools", type=int, default=20)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-load", action="store_true", help="skip the run beside a CPU-burning process")
    args = parser.parse_args(argv)
    quiet_logs()
    runs = {"idle": asyncio.run(measure_llm(args.requests, args.tokens, args.seed))}
    if not args.no_load:
        with CpuNeighbour():
            runs["loaded"] = asyncio.run(measure_llm(args.requests, args.tokens, args.seed))
    tool = asyncio.run(measure_tool(args.tools, args.seed))
    idle = runs["idle"]
    print(f"(d) timing accuracy vs the server's own stamps, {idle['requests']} requests, {idle['gaps']} gaps; "
          "goal: wire TTFT and ITL within 1 ms idle, 2 ms loaded")
    for name, llm in runs.items():
        print(f"  {name}: {'error ms':<19} {'p50':>8} {'max':>9} {'p99':>9}")
        print(_row("TTFT on the wire", llm, "wire_ttft"))
        print(_row("ITL on the wire", llm, "wire_itl"))
        print(_row("TTFT as delivered", llm, "ttft"))
        print(_row("ITL as delivered", llm, "itl"))
        print(f"  {'delivery lag (socket → SDK)':<26} {llm['delivery_lag_p50_ms']:8.3f} {llm['delivery_lag_max_ms']:9.3f}")
    print(f"  tool  over {tool['tool_runs']} runs: max error {tool['tool_err_max_ms']:.3f} ms, p50 {tool['tool_err_p50_ms']:.3f} ms")
    out = {**idle, **tool}
    if "loaded" in runs:
        out["loaded"] = runs["loaded"]
    return out


if __name__ == "__main__":
    main()
