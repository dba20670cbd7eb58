"""Ctrl-C or SIGTERM in the middle of a real run: exit 130 / 143, a valid trace up to that moment,
llama-server stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from urllib.parse import urlparse

import pytest

from voicetrace.run.folder import RunFolder
from voicetrace.traces.files import read_trace_files

from tests.conftest import SAMPLES, VOICETRACE, wait_for

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_call(tmp_path, signum, code):
    proc = subprocess.Popen(
        [str(VOICETRACE), "run", str(SAMPLES / "address_change.wav"), "--out", str(tmp_path), "--run-id", "cc"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, COLUMNS="140"),
    )
    folder = RunFolder(tmp_path / "cc")
    trace = folder.trace
    try:
        wait_for(lambda: trace.exists() and '"name":"turn"' in trace.read_text(), 120, "the first turn's spans")
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr[-2000:]
    assert "Traceback" not in stderr
    assert "interrupted" in stderr
    tables = read_trace_files([trace])
    assert tables.skipped == 0
    assert (tables.spans["name"] == "turn").sum() >= 1
    assert (tables.spans["name"] == "conversation").sum() == 1  # closed at the interruption
    info = folder.read_info()
    assert info["status"] == "interrupted"
    assert folder.call_recording.exists() and folder.bot_audio.exists()
    port = urlparse(info["pipeline"]["llm_base_url"]).port
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
