"""The reference agent replaying a recorded call: what ``voicetrace run CALL`` does, as a script.

    python pipelines/reference_agent.py samples/calls/claim_status.wav
    python pipelines/reference_agent.py CALL.wav --llm-url http://HOST:8000/v1 --model NAME

``run_call`` opens and checks the call, starts the embedded llama-server (unless ``--llm-url``),
builds the reference pipeline (voicetrace.pipelines.reference: VAD + smart-turn → Whisper → LLM →
Piper) between a file transport that feeds the call in real time and one that plays and records
the replies, puts VoiceTraceObserver on it, runs it, and writes runs/<run-id>/ (trace.jsonl,
bot.wav, call.wav, run.json). For the same agent on a network transport see live_agent.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from voicetrace.errors import UserError
from voicetrace.run import RunOptions, run_call


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Replay a recorded call through the traced reference agent.")
    p.add_argument("call", type=Path)
    p.add_argument("--out", type=Path, default=Path("runs"))
    p.add_argument("--llm-url")
    p.add_argument("--model")
    args = p.parse_args(argv)
    options = RunOptions(call_path=args.call, out_dir=args.out, llm_url=args.llm_url, llm_model=args.model)
    try:
        result = run_call(options)  # checks every option before it creates anything
    except UserError as exc:  # one line and the exit-code table's code (usage 2, input 3, runtime 4)
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    print(f"{result.turns} turns, {result.spans_written} spans in {result.wall_seconds:.1f} s")
    print(f"voicetrace report {result.folder.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
