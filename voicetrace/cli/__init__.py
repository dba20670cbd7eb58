"""voicetrace's command line: one module per command (run, report, compare, analyze, doctor), each
thin — parse, call the library, print.

A user's mistake anywhere below is a ``voicetrace.errors.UserError``; ``main`` prints its one line
and exits with its code from the one table (usage 2, bad input 3, runtime 4). No tracebacks.
"""

from voicetrace.cli.app import app, main
from voicetrace.cli import analyze, compare, doctor, report, run  # noqa: F401  (each registers its commands)

__all__ = ["app", "main"]
