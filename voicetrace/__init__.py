"""voicetrace: where every millisecond of a voice agent's reply goes."""

__version__ = "0.1.0"
