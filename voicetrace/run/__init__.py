"""Replaying one call through the reference pipeline into a run folder (options, folder, LLM backend,
pipeline assembly, signals and watchdog)."""
