"""Servers voicetrace runs: the embedded llama-server (started and stopped per run), and the scripted
and fault-injecting OpenAI-compatible LLM servers the tests and benchmarks measure against."""
