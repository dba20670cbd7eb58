"""The run's parts without a pipeline: the LLM backend and the embedded server's watchdog."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from types import SimpleNamespace

import pytest

from voicetrace.errors import EXIT_RUNTIME
from voicetrace.run.backend import EMBEDDED_LLM, embedded_backend, external_backend, normalise_llm_url
from voicetrace.run.folder import RunFolder
from voicetrace.run.lifecycle import _watch_embedded
from voicetrace.run.options import RunError


def test_llm_urls_are_normalised_to_the_v1_root():
    assert normalise_llm_url("http://h:8000") == "http://h:8000/v1"
    assert normalise_llm_url("http://h:8000/v1/") == "http://h:8000/v1"


def test_a_user_url_nobody_answers_is_a_runtime_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        with pytest.raises(RunError) as err:
            external_backend(f"http://127.0.0.1:{port}", "m", 30.0)
    assert err.value.exit_code == EXIT_RUNTIME and "is not reachable" in err.value.message


def test_an_embedded_server_that_dies_at_start_up_is_one_line_and_reaped(tmp_path):
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\necho 'no model for you'\nexit 3\n")
    binary.chmod(0o755)
    log = RunFolder(tmp_path).llama_log
    with pytest.raises(RunError, match="exited with code 3 during start-up") as err:
        with embedded_backend((binary, tmp_path / "m.gguf"), log, threads=1, stall_timeout_s=5):
            pass
    assert "\n" not in err.value.message and "no model for you" in log.read_text()


class _Worker:
    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def cancel(self, reason: str) -> None:
        self.cancelled.append(reason)


def test_the_watchdog_says_how_the_embedded_server_died_and_cancels_the_pipeline(tmp_path):
    folder = RunFolder(tmp_path)
    process = subprocess.Popen(["sh", "-c", "kill -9 $$"])
    server = SimpleNamespace(process=process, log_path=folder.llama_log)
    worker, died = _Worker(), []
    asyncio.run(asyncio.wait_for(_watch_embedded(server, worker, folder, died), 10))
    assert worker.cancelled == ["llama-server exited"]
    assert died == [f"llama-server exited mid-call (killed by SIGKILL); spans so far are in {folder.trace}; "
                    f"see {folder.llama_log}"]


def test_the_backend_says_what_run_json_records():
    from voicetrace.run.backend import LLMBackend

    external = LLMBackend("http://h/v1", "m", stall_timeout_s=2.0)
    assert external.describe() == {"server": "external", "base_url": "http://h/v1", "model": "m",
                                   "llama_cpp_timings": False, "stall_timeout_s": 2.0}
    assert LLMBackend("http://h/v1", "m", server=object(), llama_cpp_timings=True).kind == EMBEDDED_LLM
