"""Importable pipecat pieces the replay and a team's own agent build on: the file transport, streaming
Whisper, WebRTC VAD with its audio position, the first-clause aggregator, warm-up, and the reference
agent's service line-up (``reference.build_processors``). Runnable scripts are in the top-level
``pipelines/`` folder."""
