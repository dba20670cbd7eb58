import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "calls"
VOICETRACE = Path(sys.executable).parent / "voicetrace"


@pytest.fixture
def cli_env():
    env = dict(os.environ)
    env.setdefault("COLUMNS", "140")
    return env
