"""Token estimates without a tokenizer download.

tiktoken fetches its encoding files on first use, which fails with no network. We estimate
instead: about 4 characters per token for English prose and JSON (OpenAI's own rule of
thumb), counting words and punctuation separately so that dense JSON is not undercounted,
plus a fixed overhead per message. Measured against a published reference (the OpenAI
cookbook's six example chat messages, 129 prompt tokens by the API) it gives 140, 8.5% over;
for very short strings it is further off ("2 + 2 = 4": 4 estimated, 7 real), which matters
little because budgets are about long conversations. The context manager keeps a 10% margin.
"""

from __future__ import annotations

import functools
import math
import re

from agents.llm.base import Message

_PIECES = re.compile(r"\w+|[^\w\s]", re.UNICODE)
PER_MESSAGE_OVERHEAD = 4


@functools.lru_cache(maxsize=2048)
def estimate_text_tokens(text: str) -> int:
    # Cached: every request of an agent repeats its system prompt, the longest text it sends.
    if not text:
        return 0
    by_chars = len(text) / 4
    by_pieces = len(_PIECES.findall(text)) * 0.75
    return max(1, math.ceil(max(by_chars, by_pieces)))


def estimate_messages_tokens(messages: list[Message]) -> int:
    total = 3
    for m in messages:
        total += PER_MESSAGE_OVERHEAD + estimate_text_tokens(m.content)
        for call in m.tool_calls:
            total += estimate_text_tokens(call.name) + estimate_text_tokens(str(call.arguments))
    return total
