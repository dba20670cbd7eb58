"""Child servers voicetrace starts and stops (llama-server)."""
