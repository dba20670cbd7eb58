"""The reference agent's tools: a local SQLite database of policies and claims."""
