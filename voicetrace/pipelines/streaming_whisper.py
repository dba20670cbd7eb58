"""faster-whisper behind a streaming wrapper: interim transcripts while the caller speaks, and at
the end of the utterance only the unconfirmed tail is transcribed.

While speech goes on, the audio after the last confirmed word is re-transcribed every
``interim_interval_s``; words that two consecutive passes agree on, and that end well before
the live edge, are confirmed (local agreement). When the VAD says the caller stopped, only
the audio after the confirmed words is transcribed, so finalization stays small.
Each final TranscriptionFrame carries ``result`` = {voicetrace timings} for the ``asr`` span.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import AsyncGenerator

import numpy as np
from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.services.stt_service import STTService
from pipecat.transcriptions.language import Language
from pipecat.utils.time import time_now_iso8601

RATE = 16_000
_CONFIRM_MARGIN_S = 0.5  # words ending this close to the live edge may still change
_TAIL_OVERLAP_S = 0.25   # re-hear a little before the confirmed edge so no word is cut in half
_MIN_TAIL_S = 0.25
_SILENCE_RMS = 0.004


@dataclass(frozen=True)
class Word:
    start_s: float
    end_s: float
    text: str

    @property
    def key(self) -> str:
        return re.sub(r"[^\w']", "", self.text.lower())


def _drop_overlap(confirmed: str, tail: str) -> str:
    """The tail is re-heard from a little before the confirmed edge: drop a repeated last word."""
    if not confirmed or not tail:
        return tail
    last = re.sub(r"[^\w']", "", confirmed.split()[-1].lower())
    first, _, rest = tail.partition(" ")
    return rest if re.sub(r"[^\w']", "", first.lower()) == last else tail


class _Utterance:
    """One stretch of speech between a VAD start and stop; tasks keep their own."""

    def __init__(self, pre_roll: np.ndarray) -> None:
        self.chunks = [pre_roll]
        self.samples = len(pre_roll)
        self.confirmed: list[Word] = []
        self.previous: list[Word] = []
        self.last_interim_at = 0
        self.interim: asyncio.Task | None = None

    def audio(self) -> np.ndarray:
        return np.concatenate(self.chunks)

    def text(self, extra: list[Word] = ()) -> str:
        return "".join(w.text for w in [*self.confirmed, *extra]).strip()

    def tail(self) -> tuple[np.ndarray, float]:
        """The audio after the confirmed words (with a little overlap) and where it starts."""
        edge_s = self.confirmed[-1].end_s if self.confirmed else 0.0
        start_s = max(0.0, edge_s - _TAIL_OVERLAP_S)
        return self.audio()[int(start_s * RATE):], start_s

    def new_words(self, words: list[Word]) -> list[Word]:
        edge = self.confirmed[-1].end_s if self.confirmed else 0.0
        return [w for w in words if w.end_s > edge + 0.05]


class StreamingWhisperSTTService(STTService):
    def __init__(
        self,
        *,
        model_path: str,
        language: str = "en",
        compute_type: str = "int8",
        cpu_threads: int = 0,
        interim_interval_s: float = 0.8,
        pre_roll_s: float = 0.3,
        short_window_s: float | None = None,
        **kwargs,
    ) -> None:
        from pipecat.services.settings import STTSettings

        kwargs.setdefault("settings", STTSettings(model=model_path, language=Language(language)))
        super().__init__(**kwargs)
        self._model_path = model_path
        self._language = language
        self._compute_type = compute_type
        self._cpu_threads = cpu_threads
        self._interim_interval = int(interim_interval_s * RATE)
        # Whisper pads every pass to a 30 s window, so its encoder costs the same for 1 s of speech
        # as for 30. With short_window_s set, the final pass encodes only the tail plus a margin
        # (at least this many seconds): CTranslate2 takes the shorter input (whisper.cpp's
        # "audio_ctx" idea). None keeps Whisper's standard window. See BENCHMARKS.md.
        self._short_window_s = short_window_s
        self._pre_roll = int(pre_roll_s * RATE)
        self._model = None
        self._recent = np.zeros(0, dtype=np.int16)  # pre-roll ring
        self._utterance: _Utterance | None = None
        self._final_tasks: set[asyncio.Task] = set()
        self.finalize_ms: list[float] = []
        from faster_whisper import WhisperModel

        # Loaded here, like pipecat's own Whisper service, so the model is ready (and can be
        # warmed) before the first frame of the call is fed.
        self._model = WhisperModel(model_path, device="cpu", compute_type=compute_type, cpu_threads=cpu_threads)


    def can_generate_metrics(self) -> bool:
        return True

    # --- audio --------------------------------------------------------------------------
    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        pcm = np.frombuffer(audio, dtype=np.int16)
        u = self._utterance
        if u is not None:
            u.chunks.append(pcm)
            u.samples += len(pcm)
            if u.samples - u.last_interim_at >= self._interim_interval and u.interim is None:
                u.last_interim_at = u.samples
                u.interim = self.create_task(self._interim(u), "voicetrace::asr_interim")
        else:
            self._recent = np.concatenate([self._recent, pcm])[-self._pre_roll:]
        yield None

    async def _handle_vad_user_started_speaking(self, frame: VADUserStartedSpeakingFrame) -> None:
        await super()._handle_vad_user_started_speaking(frame)
        # The VAD fires start_secs after the onset: keep that audio plus a little pre-roll.
        self._utterance = _Utterance(self._recent.copy())
        self._recent = np.zeros(0, dtype=np.int16)

    async def _handle_vad_user_stopped_speaking(self, frame: VADUserStoppedSpeakingFrame) -> None:
        await super()._handle_vad_user_stopped_speaking(frame)
        u, self._utterance = self._utterance, None
        if u is None:
            return
        task = self.create_task(self._finalize(u, time.monotonic_ns()), "voicetrace::asr_final")
        self._final_tasks.add(task)
        task.add_done_callback(self._final_tasks.discard)

    # --- transcription ------------------------------------------------------------------
    def _transcribe(self, audio: np.ndarray, offset_s: float, prompt: str | None) -> list[Word]:
        floats = audio.astype(np.float32) / 32768.0
        segments, _ = self._model.transcribe(
            floats, language=self._language, beam_size=1, best_of=1, temperature=0.0,
            condition_on_previous_text=False, word_timestamps=True, vad_filter=False,
            initial_prompt=prompt or None, without_timestamps=False,
        )
        words = []
        for segment in segments:
            for w in segment.words or ():
                words.append(Word(w.start + offset_s, w.end + offset_s, w.word))
        return words

    def _transcribe_short_window(self, audio: np.ndarray) -> str:
        """Text of ``audio`` from an encoder window just long enough for it (no word times)."""
        import ctranslate2
        from faster_whisper.tokenizer import Tokenizer

        model = self._model
        features = model.feature_extractor(audio.astype(np.float32) / 32768.0)
        frames = min(3000, max(int(self._short_window_s * 100), features.shape[1] + 100))
        features = features[:, :frames]
        if features.shape[1] < frames:
            features = np.pad(features, ((0, 0), (0, frames - features.shape[1])))
        encoded = model.model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None])))
        tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=self._language)
        prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
        result = model.model.generate(encoded, [prompt], beam_size=1, max_length=224, suppress_blank=True)
        return tokenizer.decode(result[0].sequences_ids[0]).strip()

    async def _interim(self, u: _Utterance) -> None:
        try:
            audio = u.audio()
            tail, offset = u.tail()
            hypothesis = u.new_words(await asyncio.to_thread(self._transcribe, tail, offset, u.text()))
            live_edge_s = len(audio) / RATE
            agreed = []
            for now, before in zip(hypothesis, u.previous):
                if now.key != before.key or now.end_s > live_edge_s - _CONFIRM_MARGIN_S:
                    break
                agreed.append(now)
            u.confirmed += agreed
            u.previous = hypothesis[len(agreed):]
            text = u.text(u.previous)
            if text and self._utterance is u:
                await self.push_frame(InterimTranscriptionFrame(text, self._user_id, time_now_iso8601(), Language(self._language)))
        except Exception as exc:
            await self.push_error(error_msg=f"streaming ASR interim failed: {exc}", exception=exc)
        finally:
            u.interim = None

    async def _finalize(self, u: _Utterance, stop_ns: int) -> None:
        try:
            # An interim still running is not awaited: it would add up to a whole pass to the
            # caller's wait. The tail starts after the words confirmed so far.
            audio = u.audio()
            tail, offset = u.tail()
            tail_s = len(tail) / RATE
            words: list[Word] = []
            rms = float(np.sqrt(np.mean((tail.astype(np.float32) / 32768.0) ** 2))) if len(tail) else 0.0
            tail_text = None
            if tail_s >= _MIN_TAIL_S and rms > _SILENCE_RMS:
                if self._short_window_s:
                    tail_text = _drop_overlap(u.text(), await asyncio.to_thread(self._transcribe_short_window, tail))
                else:
                    words = u.new_words(await asyncio.to_thread(self._transcribe, tail, offset, u.text()))
            text = u.text(words) if tail_text is None else f"{u.text()} {tail_text}".strip()
            finalize_ms = (time.monotonic_ns() - stop_ns) / 1e6
            self.finalize_ms.append(finalize_ms)
            if text:
                result = {
                    "voicetrace": True,
                    "audio_s": round(len(audio) / RATE, 3),
                    "tail_s": round(tail_s, 3),
                    "confirmed_words": len(u.confirmed),
                    "finalize_ms": round(finalize_ms, 1),
                }
                await self.push_frame(
                    TranscriptionFrame(text, self._user_id, time_now_iso8601(), Language(self._language),
                                       result=result, finalized=True)
                )
        except Exception as exc:
            await self.push_frame(ErrorFrame(f"streaming ASR failed: {exc}"))
