"""What text may go on spans: nothing by default (calls carry personal data).

Content (transcripts, LLM messages and output, tool arguments) is recorded only when capture
is on (``--capture-content`` or the standard OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT);
``--redact`` then masks digit runs and e-mail addresses in every text attribute.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DIGITS = re.compile(r"\d+")
MAX_TEXT_CHARS = 8192


def capture_from_env() -> bool:
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def redact(text: str) -> str:
    text = _EMAIL.sub("<email>", text)
    return _DIGITS.sub(lambda m: "#" * len(m.group()), text)


@dataclass(frozen=True)
class ContentPolicy:
    capture: bool = False
    redact: bool = False

    @classmethod
    def from_flags(cls, capture: bool | None = None, redact_text: bool = False) -> "ContentPolicy":
        return cls(capture=capture_from_env() if capture is None else capture, redact=redact_text)

    def text(self, value: str | None) -> str | None:
        """The text to record, or None when content capture is off."""
        if not self.capture or value is None:
            return None
        value = value[:MAX_TEXT_CHARS]
        return redact(value) if self.redact else value
