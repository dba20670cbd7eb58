"""Runnable reference voice pipelines built from the library (pipecat)."""
