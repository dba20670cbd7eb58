"""Simple intent rules on the caller's transcript, for models that cannot call tools.

SmolLM2-135M (the embedded default) does not call tools reliably, so the reference agent
also triggers tools from what the caller said; spans record which path ran.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER_WORDS = {
    "zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4",
    "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
}
_CLAIM_ID = re.compile(r"\b(\d{5})\b")
_ADDRESS = re.compile(r"\baddress is\s+(?P<address>.+?)[.!?]*$", re.IGNORECASE)


@dataclass(frozen=True)
class Intent:
    tool: str
    arguments: dict


def match_intents(transcript: str) -> list[Intent]:
    text = transcript.strip()
    found: list[Intent] = []
    claim = _CLAIM_ID.search(text.replace("-", "").replace(",", "")) or _CLAIM_ID.search(_spelled_digits(text))
    if claim and "claim" in text.lower():
        found.append(Intent("get_claim_status", {"claim_id": claim.group(1)}))
    address = _ADDRESS.search(text)
    if address:
        found.append(Intent("update_address", {"new_address": address.group("address").strip()}))
    return found


def _spelled_digits(text: str) -> str:
    """Collapse runs of spelled-out digits into numbers, leaving other words alone."""
    out, run = [], []
    for word in re.findall(r"[A-Za-z]+|\d+|\S", text):
        digit = _NUMBER_WORDS.get(word.lower())
        if digit is not None or word.isdigit():
            run.append(digit if digit is not None else word)
            continue
        if run:
            out.append("".join(run))
            run = []
        out.append(word)
    if run:
        out.append("".join(run))
    return " ".join(out)
