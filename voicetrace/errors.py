"""The errors a user can cause, and the one exit-code table.

Library code raises a ``UserError`` subclass with one line for the user; the CLI prints that line and
exits with the error's code. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_VIOLATION = 1
"""``check``: a budget is violated; ``doctor``: the embedded default cannot run."""
EXIT_USAGE = 2
"""Bad command-line usage: an unknown value, a missing companion flag, a bad duration."""
EXIT_INPUT = 3
"""Bad input: a missing, empty or unreadable file, corrupt audio, an unknown trace or service."""
EXIT_RUNTIME = 4
"""Could not start or complete: a server unreachable or missing, a component not installed."""
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class UserError(Exception):
    """Something the user can fix; ``message`` is one line, ``exit_code`` from the table above."""

    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(UserError):
    exit_code = EXIT_USAGE


class InputError(UserError):
    exit_code = EXIT_INPUT


class RuntimeFailure(UserError):
    exit_code = EXIT_RUNTIME
