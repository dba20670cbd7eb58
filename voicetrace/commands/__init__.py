"""Analysis commands (report, diff, check, whatif): the work behind cli.py's thin wrappers.

Each ``*_command`` function takes parsed arguments and a rich Console, prints, and raises
``CommandError`` (one line, exit code) for what a user can get wrong.
"""

from __future__ import annotations


class CommandError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
