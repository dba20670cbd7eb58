"""The agent's tools over the claims database. Each returns a short dict the LLM can speak from."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class ToolError(Exception):
    """A tool could not do what was asked (unknown claim, no policy)."""


class InsuranceTools:
    def __init__(self, db_path: Path, caller_phone: str = "+15550100") -> None:
        self._db_path = db_path
        self.caller_phone = caller_phone
        self.policy_id: str | None = None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._db_path)
        db.row_factory = sqlite3.Row
        return db

    def lookup_policy(self, phone: str | None = None) -> dict:
        with self._connect() as db:
            row = db.execute("SELECT * FROM policies WHERE phone = ?", (phone or self.caller_phone,)).fetchone()
        if row is None:
            raise ToolError(f"no policy for caller {phone or self.caller_phone}")
        self.policy_id = row["policy_id"]
        return dict(row)

    def get_claim_status(self, claim_id: str) -> dict:
        with self._connect() as db:
            row = db.execute("SELECT * FROM claims WHERE claim_id = ?", (str(claim_id),)).fetchone()
        if row is None:
            raise ToolError(f"no claim {claim_id}")
        return dict(row)

    def update_address(self, new_address: str, policy_id: str | None = None) -> dict:
        policy_id = policy_id or self.policy_id
        if not policy_id:
            raise ToolError("no policy to update: look the caller up first")
        with self._connect() as db:
            row = db.execute("SELECT address FROM policies WHERE policy_id = ?", (policy_id,)).fetchone()
            if row is None:
                raise ToolError(f"no policy {policy_id}")
            db.execute("UPDATE policies SET address = ? WHERE policy_id = ?", (new_address, policy_id))
            db.execute(
                "INSERT INTO address_changes (policy_id, old_address, new_address) VALUES (?, ?, ?)",
                (policy_id, row["address"], new_address),
            )
        return {"policy_id": policy_id, "old_address": row["address"], "new_address": new_address}


TOOL_SCHEMAS = [
    {
        "name": "get_claim_status",
        "description": "Status and next step of an insurance claim.",
        "properties": {"claim_id": {"type": "string", "description": "The claim number, digits only."}},
        "required": ["claim_id"],
    },
    {
        "name": "update_address",
        "description": "Change the caller's postal address on their policy.",
        "properties": {"new_address": {"type": "string", "description": "The full new address."}},
        "required": ["new_address"],
    },
]
"""Function-calling schemas for the tools that run in turns (lookup_policy runs at call start)."""
