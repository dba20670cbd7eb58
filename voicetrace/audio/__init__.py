"""Audio in and out: read recordings (one reader, one error), feed the caller's, record both sides on one timeline."""
