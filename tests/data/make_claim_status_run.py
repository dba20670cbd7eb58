"""Regenerate tests/data/claim_status_run/: a real run of the claim_status sample, kept small.

The run folder of a real `voicetrace run` keeps its trace as it is and its call.wav (3 MB) as Ogg/Opus
(the report's own encoding, ~160 KB); tests decode call.ogg back into a run folder's call.wav.

    flock /tmp/voicetrace-heavy.lock .venv/bin/voicetrace run samples/calls/claim_status.wav --out /tmp/runs --run-id claim_status
    .venv/bin/python -m tests.data.make_claim_status_run /tmp/runs/claim_status
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from voicetrace.audio.compress import encode_ogg_opus
from voicetrace.run.folder import RunFolder

HERE = Path(__file__).parent / "claim_status_run"
TRACE, RECORDING = HERE / "trace.jsonl", HERE / "call.ogg"


if __name__ == "__main__":
    run = RunFolder(Path(sys.argv[1]))
    HERE.mkdir(exist_ok=True)
    shutil.copyfile(run.trace, TRACE)
    RECORDING.write_bytes(encode_ogg_opus(run.call_recording).data)
    print(f"{TRACE}: {TRACE.stat().st_size:,} bytes; {RECORDING}: {RECORDING.stat().st_size:,} bytes")
