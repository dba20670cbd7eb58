"""Hand TTS the reply's first clause, not its whole first sentence.

Piper synthesises a chunk at a time, so its first audio waits for the whole first chunk of
text. The first chunk of each reply is released at a clause boundary (, ; :) once it has a few
words; the rest of the reply goes by sentences, which Piper phrases better.
"""

from __future__ import annotations

from typing import AsyncIterator

from pipecat.utils.text.base_text_aggregator import Aggregation
from pipecat.utils.text.simple_text_aggregator import SimpleTextAggregator

_CLAUSE_ENDS = (",", ";", ":")


class FirstClauseAggregator(SimpleTextAggregator):
    def __init__(self, min_words: int = 3, **kwargs) -> None:
        super().__init__(**kwargs)
        self._min_words = min_words
        self._first_released = False

    async def aggregate(self, text: str) -> AsyncIterator[Aggregation]:
        async for aggregation in super().aggregate(text):
            self._first_released = True
            yield aggregation
        if self._first_released:
            return
        buffered = self._text.rstrip()
        if buffered.endswith(_CLAUSE_ENDS) and len(buffered.split()) >= self._min_words:
            self._first_released = True
            clause = self.text
            self._text = ""
            yield clause

    async def flush(self):
        self._first_released = False  # the reply is over: the next one starts with a clause
        return await super().flush()

    async def reset(self) -> None:
        self._first_released = False
        await super().reset()
