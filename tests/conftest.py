import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "calls"
VOICETRACE = Path(sys.executable).parent / "voicetrace"


def wait_for(condition, timeout_s: float, what: str) -> None:
    """Poll a condition until it holds (a condition with a timeout, not a synchronising sleep)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def cli_env():
    env = dict(os.environ)
    env.setdefault("COLUMNS", "140")
    return env
