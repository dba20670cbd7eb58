import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "calls"
VOICETRACE = Path(sys.executable).parent / "voicetrace"


def wait_for(condition, timeout_s: float, what: str, interval_s: float = 0.2):
    """Poll ``condition`` until it returns something truthy, and return that value (a condition with a
    timeout, not a synchronising sleep)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@pytest.fixture
def cli_env():
    env = dict(os.environ)
    env.setdefault("COLUMNS", "140")
    return env
