"""Audio in and out: load and pace the caller's recording, record both sides on one timeline."""
