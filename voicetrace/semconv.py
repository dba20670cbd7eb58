"""Span names, event names and attribute keys: the contract between capture and analysis.

OpenTelemetry's semantic conventions where they define the key (imported from
``opentelemetry.semconv``, never retyped: ``gen_ai.*``, ``server.*``, ``error.type``), pipecat's
(``conversation.*``, ``turn.*``) where they fit, ``voice.*`` for what neither defines. Each
constant's docstring states its unit. Times on spans and events are epoch nanoseconds from the
run's one monotonic clock (see ``voicetrace.clock``).

The LLM call's span follows the GenAI client-span convention (kind CLIENT, ``gen_ai.operation.name``
``chat``, ``gen_ai.provider.name``, ``server.address`` host + ``server.port``) except its name:
it stays ``llm`` (the convention's ``chat {model}``) because the report and every existing trace
key the pipeline's stages on span names.
"""

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _gen_ai
from opentelemetry.semconv.attributes import error_attributes as _error
from opentelemetry.semconv.attributes import server_attributes as _server

# --- span names -----------------------------------------------------------------------
SPAN_CONVERSATION = "conversation"
"""One per call; starts at the call's time zero (first audio frame fed)."""
SPAN_TURN = "turn"
"""One per user turn: caller speech onset → end of the bot's reply."""
SPAN_USER_SPEECH = "user.speech"
"""Caller speech onset → end of the caller's last speech in the turn, placed from the caller audio itself
(10 ms frames, ``capture.audio_edges``); from the VAD when the audio detector has no answer (see
``ATTR_SPEECH_START_SOURCE``). Traces written before that have the VAD's edges."""
SPAN_ENDPOINTING = "turn.endpointing"
"""Caller speech end → end of turn decided (VAD silence window + turn model)."""
SPAN_ASR = "asr"
"""ASR work for the turn → final transcript available."""
SPAN_LLM = "llm"
"""LLM request sent → last token received (client side); kind CLIENT, GenAI ``chat`` attributes."""
SPAN_TTS = "tts"
"""First text handed to TTS → last audio out of TTS."""
SPAN_BOT_SPEECH = "bot.speech"
"""First bot audio frame played → last one played (or interrupted)."""
SPAN_TOOL_PREFIX = "tool."
"""Prefix of tool execution spans: ``tool.<name>``."""
SPAN_LLM_QUEUE = "llm.server.queue"
"""Child of ``llm``: time the request waited in the server's queue (when the server tells)."""
SPAN_LLM_PREFILL = "llm.server.prefill"
"""Child of ``llm``: the server's prompt processing, placed to end at the first token."""
SPAN_LLM_DECODE = "llm.server.decode"
"""Child of ``llm``: the server's token generation, placed to end at the last token."""

STAGE_SPANS = (
    SPAN_USER_SPEECH,
    SPAN_ENDPOINTING,
    SPAN_ASR,
    SPAN_LLM,
    SPAN_TTS,
    SPAN_BOT_SPEECH,
)
"""The stage spans every complete turn has, in causal order of their start."""

# --- event names ----------------------------------------------------------------------
EVENT_FIRST_TOKEN = "gen_ai.first_token"
"""On ``llm``: the first content token arrived (role-only/empty chunks don't count)."""
EVENT_TOKEN = "gen_ai.token"
"""On ``llm``: one content token (or chunk, see ATTR_TOKEN_COUNT) arrived."""
EVENT_TTS_FIRST_AUDIO = "tts.first_audio"
"""On ``tts``: the first audio came out of TTS (TTFB)."""
EVENT_ASR_INTERIM = "asr.interim"
"""On ``asr``: an interim transcript."""
EVENT_VAD_STARTED = "voice.vad.started"
"""On the ``turn`` span: when the pipeline's VAD declared the caller speaking (when the pipeline knew)."""
EVENT_VAD_STOPPED = "voice.vad.stopped"
"""On the ``turn`` span: when the pipeline's VAD declared the caller silent (once per VAD segment)."""
EVENT_BOT_AUDIBLE = "voice.bot.audible"
"""On ``bot.speech``: the first audible bot audio (10 ms frame over the bot track's level threshold)."""
EVENT_TURN_INCOMPLETE = "turn.incomplete"
"""On ``turn.endpointing``: the turn model judged the caller not finished yet."""

# --- conversation ---------------------------------------------------------------------
ATTR_CONVERSATION_ID = "conversation.id"
"""String; one id per call."""
ATTR_CALL_FILE = "voice.call.file"
"""String; the replayed recording's file name."""
ATTR_CALL_DURATION_MS = "voice.call.duration_ms"
"""Float, milliseconds; length of the replayed recording."""
ATTR_PIPELINE = "voice.pipeline"
"""String; which pipeline produced the spans (e.g. ``reference``)."""

# --- turn -----------------------------------------------------------------------------
ATTR_TURN_NUMBER = "turn.number"
"""Int, 1-based; the turn's position in the call."""
ATTR_TURN_INTERRUPTED = "turn.was_interrupted"
"""Bool; the caller spoke over the bot's reply."""
ATTR_LANGUAGE = "voice.language"
"""String, BCP-47-ish; the language the turn was transcribed in."""

# --- VAD / endpointing ----------------------------------------------------------------
ATTR_VAD_START_SECS = "voice.vad.start_secs"
"""Float, seconds; voiced audio needed before the VAD declares speech."""
ATTR_VAD_STOP_SECS = "voice.vad.stop_secs"
"""Float, seconds; silence the VAD waits before it declares the speech stopped."""
ATTR_VAD_SEGMENTS = "voice.vad.segments"
"""Int; VAD speech segments merged into this turn."""
ATTR_SPEECH_START_SOURCE = "voice.speech.start_source"
"""String on ``user.speech``; ``audio`` (the caller audio's own onset) or ``vad`` (VAD start − start_secs)."""
ATTR_SPEECH_END_SOURCE = "voice.speech.end_source"
"""String on ``user.speech``; ``audio`` (the caller audio's last speech) or ``vad`` (VAD stop − stop_secs)."""
ATTR_VAD_START_LAG_MS = "voice.vad.start_lag_ms"
"""Float, milliseconds, on ``user.speech``; the VAD's own onset (start − start_secs) − the audio onset."""
ATTR_VAD_END_LAG_MS = "voice.vad.end_lag_ms"
"""Float, milliseconds, on ``user.speech``; the VAD's own speech end (stop − stop_secs) − the audio end."""
ATTR_TURN_PROBABILITY = "voice.turn.probability"
"""Float 0..1; the turn model's probability that the caller has finished."""
ATTR_TURN_COMPLETE = "voice.turn.is_complete"
"""Bool; the turn model's decision."""
ATTR_TURN_INFERENCE_MS = "voice.turn.inference_ms"
"""Float, milliseconds; time the turn model took."""
ATTR_TURN_DECISION = "voice.turn.decision"
"""String; ``complete`` (the model said so) or ``silence_fallback`` (its silence timeout fired)."""

# --- ASR ------------------------------------------------------------------------------
ATTR_ASR_MODEL = "voice.asr.model"
"""String; ASR model name."""
ATTR_ASR_TRANSCRIPT = "voice.asr.transcript"
"""String; the final transcript (only when content capture is on)."""
ATTR_ASR_TRANSCRIPT_CHARS = "voice.asr.transcript_chars"
"""Int, characters; length of the final transcript (always recorded)."""
ATTR_ASR_MODE = "voice.asr.mode"
"""String; ``streaming`` (interims, tail-only finalization) or ``segmented`` (one pass per VAD segment)."""
ATTR_ASR_AUDIO_MS = "voice.asr.audio_ms"
"""Float, milliseconds; audio the ASR heard for the utterance."""
ATTR_ASR_TAIL_MS = "voice.asr.tail_ms"
"""Float, milliseconds; unconfirmed audio transcribed after the VAD stop (streaming)."""
ATTR_ASR_FINALIZE_MS = "voice.asr.finalize_ms"
"""Float, milliseconds; VAD stop → final transcript, measured inside the ASR service."""
ATTR_ASR_INTERIMS = "voice.asr.interim_count"
"""Int; interim transcripts published while the caller spoke."""

# --- LLM (OpenTelemetry GenAI) --------------------------------------------------------
ATTR_GENAI_OPERATION = _gen_ai.GEN_AI_OPERATION_NAME
"""String; ``chat`` (GENAI_OPERATION_CHAT)."""
GENAI_OPERATION_CHAT = _gen_ai.GenAiOperationNameValues.CHAT.value
"""The value of ATTR_GENAI_OPERATION on every ``llm`` span."""
ATTR_GENAI_PROVIDER = _gen_ai.GEN_AI_PROVIDER_NAME
"""String; the LLM provider/server family as the client knows it (e.g. ``openai``)."""
ATTR_GENAI_SYSTEM = _gen_ai.GEN_AI_SYSTEM
"""String; deprecated by OpenTelemetry for ATTR_GENAI_PROVIDER: found on traces written before it.
Capture never writes it: a stage attribute given under this key is written as the provider."""
ATTR_GENAI_REQUEST_MODEL = _gen_ai.GEN_AI_REQUEST_MODEL
"""String; model name requested."""
ATTR_SERVER_ADDRESS = _server.SERVER_ADDRESS
"""String; the LLM server's host name or IP address (no scheme, port or path)."""
ATTR_SERVER_PORT = _server.SERVER_PORT
"""Int; the LLM server's port (the scheme's default when the URL names none)."""
ATTR_GENAI_SERVER_ADDRESS = ATTR_SERVER_ADDRESS
"""Old name of ATTR_SERVER_ADDRESS. A base URL given under it is split into host and port."""
ATTR_GENAI_OUTPUT_TOKENS = _gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
"""Int, tokens; content tokens received."""
ATTR_GENAI_INPUT_TOKENS = _gen_ai.GEN_AI_USAGE_INPUT_TOKENS
"""Int, tokens; prompt tokens (when the server reports usage)."""
ATTR_GENAI_FINISH_REASONS = _gen_ai.GEN_AI_RESPONSE_FINISH_REASONS
"""String[]; why generation stopped."""
ATTR_LLM_TTFT_MS = "voice.llm.ttft_ms"
"""Float, milliseconds; first content token − request sent."""
ATTR_LLM_TPOT_MS = "voice.llm.tpot_ms"
"""Float, milliseconds; (last token − first token) / (tokens − 1)."""
ATTR_LLM_OUTPUT = "voice.llm.output"
"""String; the generated text (only when content capture is on)."""
ATTR_LLM_OUTPUT_CHARS = "voice.llm.output_chars"
"""Int, characters; length of the generated text."""
ATTR_TOKEN_COUNT = "voice.llm.chunk_tokens"
"""Int, tokens; on a token event, how many tokens the chunk carried (>1 marks a split gap)."""
ATTR_LLM_PREPARE_MS = "voice.llm.prepare_ms"
"""Float, milliseconds; the service began the call → the HTTP request left (client-side work)."""
ATTR_LLM_CHUNKS = "voice.llm.content_chunks"
"""Int; streamed chunks that carried content."""
ATTR_LLM_TOOL_CALLS = "voice.llm.tool_calls"
"""String[]; tools the model asked for in this call."""

# --- LLM server (llama.cpp ``timings``; vLLM / SGLang request spans) -------------------
ATTR_SERVER_PROMPT_N = "llama_cpp.prompt_n"
"""Int, tokens; prompt tokens the server processed (not from its cache)."""
ATTR_SERVER_CACHE_N = "llama_cpp.cache_n"
"""Int, tokens; prompt tokens served from the server's prompt cache."""
ATTR_SERVER_PROMPT_MS = "llama_cpp.prompt_ms"
"""Float, milliseconds; the server's prompt processing time."""
ATTR_SERVER_PREDICTED_N = "llama_cpp.predicted_n"
"""Int, tokens; tokens the server generated."""
ATTR_SERVER_PREDICTED_MS = "llama_cpp.predicted_ms"
"""Float, milliseconds; the server's generation time."""
ATTR_SERVER_CLAMPED = "voice.server.clamped"
"""Bool; the server's duration did not fit inside the client's view and was clamped."""

# --- tools ----------------------------------------------------------------------------
ATTR_TOOL_NAME = _gen_ai.GEN_AI_TOOL_NAME
"""String; the tool's name."""
ATTR_TOOL_TRIGGER = "voice.tool.trigger"
"""String; ``function_call`` (the model asked) or ``intent`` (rules on the transcript)."""
ATTR_TOOL_ARGUMENTS = "voice.tool.arguments"
"""String, JSON; the tool's arguments (only when content capture is on)."""
ATTR_TOOL_RESULT_CHARS = "voice.tool.result_chars"
"""Int, characters; size of the tool's result."""

# --- TTS ------------------------------------------------------------------------------
ATTR_TTS_VOICE = "voice.tts.voice"
"""String; TTS voice name."""
ATTR_TTS_TTFB_MS = "voice.tts.ttfb_ms"
"""Float, milliseconds; first audio out − first text in."""
ATTR_TTS_CHARACTERS = "voice.tts.characters"
"""Int, characters; text synthesised in the turn."""
ATTR_TTS_AUDIO_MS = "voice.tts.audio_ms"
"""Float, milliseconds; audio synthesised in the turn."""

# --- bot speech -----------------------------------------------------------------------
ATTR_BOT_INTERRUPTED = "voice.bot.interrupted"
"""Bool; the bot's speech was cut off by the caller."""
ATTR_BOT_LEADING_SILENCE_MS = "voice.bot.leading_silence_ms"
"""Float, milliseconds, on ``bot.speech``; first bot audio played → first audible (TTS's near-silent lead-in)."""
ATTR_BOT_AUDIO_MS = "voice.bot.audio_ms"
"""Float, milliseconds; bot audio played in the turn."""
ATTR_BOT_INTERRUPTION_LATENCY_MS = "voice.bot.interruption_latency_ms"
"""Float, milliseconds; caller speech onset → bot audio stopped, on a barge-in."""
ATTR_BOT_UNSPOKEN_TOKENS = "voice.bot.unspoken_tokens"
"""Int, tokens; LLM tokens generated but never played, pro rata to unplayed audio (estimate)."""

# --- errors ---------------------------------------------------------------------------
ATTR_ERROR_TYPE = _error.ERROR_TYPE
"""String; the class of error a stage hit (the exception's class name; ERROR_TYPE_OTHER without one)."""
ERROR_TYPE_OTHER = _error.ErrorTypeValues.OTHER.value
"""``_OTHER``: OpenTelemetry's error.type for a failure that has no exception class (e.g. no tokens)."""

# --- resource (every span of a run; see voicetrace.otel.resource) ----------------------------
RES_DEPLOYMENT_ENVIRONMENT = "deployment.environment"
"""String; where the run happened (``local`` unless --environment / OTEL_RESOURCE_ATTRIBUTES)."""
RES_RUN_ID = "voice.run.id"
"""String; the run folder's name (``voicetrace run`` only): finds a replay's spans from any of them."""
RES_PIPELINE_CONFIG_PREFIX = "voice.pipeline.config."
"""Prefix of the pipeline configuration's scalar settings (seconds, tokens... as named)."""

# --- acoustic analysis (voicetrace analyze: speech segments from a recording) ----------
PIPELINE_ACOUSTIC = "acoustic"
"""Value of ATTR_PIPELINE on traces written by ``voicetrace analyze`` (audio only, no pipeline)."""
ATTR_ACOUSTIC_SPEAKER = "voice.acoustic.speaker"
"""String; ``caller`` or ``agent``: whose channel a speech segment (user.speech / bot.speech) is on."""
ATTR_ACOUSTIC_CHANNEL = "voice.acoustic.channel"
"""Int, 0-based; the recording channel a speech segment was found on."""
ATTR_ACOUSTIC_RESPONSE_GAP_MS = "voice.acoustic.response_gap_ms"
"""Float, milliseconds; on a turn: agent's first onset − caller's speech end (negative: talked over)."""
ATTR_ACOUSTIC_OVERLAP_MS = "voice.acoustic.overlap_ms"
"""Float, milliseconds; on a turn: time both sides spoke at once; on a barge-in event: that overlap."""
EVENT_BARGE_IN = "voice.barge_in"
"""On a turn: both sides voiced at once (attributes: interrupter, stopped, overlap ms)."""
ATTR_BARGE_IN_INTERRUPTER = "voice.barge_in.interrupter"
"""String; ``caller`` or ``agent``: who started speaking while the other was."""
ATTR_BARGE_IN_STOPPED = "voice.barge_in.stopped"
"""String; ``caller``, ``agent``, ``both`` or ``neither``: who fell silent first."""

# --- integration time (voicetrace.capture.loop_lag, capture.integration) ----------------------
SPAN_LOOP_BLOCKED = "loop.blocked"
"""Child of ``conversation``: the event loop ran nothing else from start to end (a synchronous call
held it), found by the loop-lag monitor and placed by the frame events around it."""
SPAN_QUEUE_WAIT = "queue.wait"
"""Child of ``conversation``: frames waited in one processor's input queue (overlapping waits merged)."""
ATTR_LOOP_PROCESSOR = "voice.loop.processor"
"""String; on ``loop.blocked``: the pipecat processor that was running when the loop stopped moving."""
ATTR_LOOP_LATE_MS = "voice.loop.late_ms"
"""Float, milliseconds; on ``loop.blocked``: how late the lag monitor woke (what detected it)."""
ATTR_LOOP_INTERVAL_MS = "voice.loop.interval_ms"
"""Float, milliseconds; on ``conversation``: the lag monitor's tick (present: the loop was monitored)."""
ATTR_LOOP_STALL_MS = "voice.loop.stall_ms"
"""Float, milliseconds; on ``conversation``: lateness below which a wake is not a stall."""
ATTR_QUEUE_PROCESSOR = "voice.queue.processor"
"""String; on ``queue.wait``: the processor whose queue the frames waited in."""
ATTR_QUEUE_FRAMES = "voice.queue.frames"
"""Int, frames; on ``queue.wait``: frames that waited in the merged interval."""
ATTR_QUEUE_MAX_WAIT_MS = "voice.queue.max_wait_ms"
"""Float, milliseconds; on ``queue.wait``: the longest single frame's wait."""

# --- behind real time (voicetrace.capture.realtime) --------------------------------------------
ATTR_BEHIND_REAL_TIME = "voice.behind_real_time"
"""Bool; on a turn: its window (speech onset → reply end) overlapped input fed late, a loop block or
audio played late, so its timings measure an overloaded machine; on ``conversation``: the run fell behind."""
ATTR_BEHIND_REASONS = "voice.behind_real_time.reasons"
"""String[]; which signs: ``input_late``, ``loop_lag``, ``playback_late`` (see capture.realtime)."""
ATTR_INPUT_LATE_MAX_MS = "voice.input.late_max_ms"
"""Float, milliseconds; on ``conversation``: the latest an input frame was fed after its deadline."""
ATTR_LOOP_BLOCKED_MAX_MS = "voice.loop.blocked_max_ms"
"""Float, milliseconds; on ``conversation``: the longest loop block counted as behind real time."""
ATTR_PLAYBACK_LATE_MAX_MS = "voice.playback.late_max_ms"
"""Float, milliseconds; on ``conversation``: the latest bot audio went on after it was due."""

# --- LLM on the wire (voicetrace.capture.wire) -------------------------------------------------
ATTR_LLM_TTFT_WIRE_MS = "voice.llm.ttft_wire_ms"
"""Float, milliseconds; on ``llm``: first content event's bytes read from the socket − request body
written to it (the server's TTFT plus the network, without the client's HTTP/SSE/SDK stack)."""
ATTR_LLM_DELIVERY_LAG_MS = "voice.llm.delivery_lag_ms"
"""Float, milliseconds; on ``llm``: first content token handed to pipecat − its bytes read from the socket."""
ATTR_LLM_DELIVERY_LAG_MAX_MS = "voice.llm.delivery_lag_max_ms"
"""Float, milliseconds; on ``llm``: the largest delivered − read over the call's content chunks."""
ATTR_LLM_REQUEST_WRITE_MS = "voice.llm.request_write_ms"
"""Float, milliseconds; on ``llm``: request handed to httpx (span start) → its body written to the socket."""
