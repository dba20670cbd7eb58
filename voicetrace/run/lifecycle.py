"""How a replay's pipeline runs and stops: SIGINT/SIGTERM → RunInterrupted, the embedded
llama-server's watchdog, pipecat's logs into the run folder."""

from __future__ import annotations

import asyncio
import signal
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

from voicetrace.run.folder import RunFolder
from voicetrace.run.options import RunError, RunInterrupted

_WATCH_INTERVAL_S = 0.25


async def run_worker(worker, folder: RunFolder, server=None) -> None:
    """Run a PipelineWorker to its end. A signal cancels it and raises RunInterrupted; the embedded
    ``server`` exiting mid-call cancels it and raises RunError (what was recorded is kept either way)."""
    from pipecat.workers.runner import WorkerRunner

    # Ctrl-C / SIGTERM: cancel the pipeline ourselves (pipecat would swallow the cancellation),
    # then report the signal so the run exits 130 / 143 with everything recorded so far.
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if not received:
            received.append(signum)
            asyncio.ensure_future(worker.cancel(reason=f"signal {signum}"))

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    # The embedded llama-server dying mid-call: every later turn would fail, so the run stops.
    died: list[str] = []
    watchdog = asyncio.ensure_future(_watch_embedded(server, worker, folder, died)) if server is not None else None
    runner = WorkerRunner(handle_sigint=False)
    try:
        await runner.add_workers(worker)
        await runner.run()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        if watchdog is not None:
            watchdog.cancel()
    if received:
        raise RunInterrupted(received[0])
    if died:
        raise RunError(died[0])


def exit_description(code: int) -> str:
    """A process's return code as words: ``killed by SIGKILL``, ``exit code 1``."""
    if code < 0 and -code in signal.valid_signals():
        return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


async def _watch_embedded(server, worker, folder: RunFolder, died: list[str]) -> None:
    """Poll the embedded server's process; when it exits, say why and cancel the pipeline."""
    while server.process is not None:
        code = server.process.poll()
        if code is not None:
            died.append(f"llama-server exited mid-call ({exit_description(code)}); spans so far are in "
                        f"{folder.trace}; see {server.log_path}")
            await worker.cancel(reason="llama-server exited")
            return
        await asyncio.sleep(_WATCH_INTERVAL_S)  # polling the child process's state


@contextmanager
def pipecat_logs_to(path: Path):
    """pipecat logs (loguru) go to the run folder; only errors reach the terminal."""
    from loguru import logger

    logger.remove()
    # pipecat's own deprecation notices are for pipecat's users, not for voicetrace's.
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"pipecat\..*")
    file_sink = logger.add(path, level="DEBUG", enqueue=False)
    err_sink = logger.add(sys.stderr, level="ERROR", format="{level}: {message}")
    try:
        yield
    finally:
        logger.remove(file_sink)
        logger.remove(err_sink)
