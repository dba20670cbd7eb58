"""A small local SQLite database of insurance policies and claims for the reference agent.

Created on first use (and by ``make install``) under ~/.cache/voicetrace/claims.sqlite.
The sample calls' caller is policy HM-2024-0917 (phone +1 555 0100), claim 45712.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from voicetrace.components import cache_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS policies (
    policy_id TEXT PRIMARY KEY, holder TEXT NOT NULL, phone TEXT NOT NULL, kind TEXT NOT NULL,
    deductible_usd INTEGER NOT NULL, covers TEXT NOT NULL, address TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    claim_id TEXT PRIMARY KEY, policy_id TEXT NOT NULL REFERENCES policies(policy_id),
    status TEXT NOT NULL, amount_usd INTEGER NOT NULL, next_step TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS address_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, policy_id TEXT NOT NULL, old_address TEXT NOT NULL,
    new_address TEXT NOT NULL, changed_at TEXT NOT NULL DEFAULT (datetime('now'))
);
"""

POLICIES = [
    ("HM-2024-0917", "Jordan Lee", "+15550100", "auto and home", 500,
     "collision, comprehensive, water damage from burst pipes, theft", "4 Harbor Road, Springfield"),
    ("HM-2023-0412", "Avery Kim", "+15550101", "home", 1000,
     "fire, theft, storm; not flood", "88 Elm Avenue, Shelbyville"),
]
CLAIMS = [
    ("45712", "HM-2024-0917", "approved", 1250, "repair payment of 1,250 dollars goes out within 5 business days"),
    ("45713", "HM-2023-0412", "in review", 4300, "an adjuster will call within 2 business days"),
]


def default_db_path() -> Path:
    return cache_dir() / "claims.sqlite"


def ensure_db(path: Path | None = None) -> Path:
    """Create and seed the database if it is missing; return its path."""
    path = Path(path or default_db_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.executescript(SCHEMA)
        db.executemany("INSERT OR IGNORE INTO policies VALUES (?, ?, ?, ?, ?, ?, ?)", POLICIES)
        db.executemany("INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?, ?)", CLAIMS)
    return path
