"""An answer as it arrives: the buffer the runtime streams into, and what of it to show.

The runtime calls the buffer on the event loop's thread (agents.llm.base.StreamSink); the
thread that asked (a worker's, or the API request's) reads a snapshot every
CHAT_STREAM_WRITE_SECONDS and writes it into the stored message. The buffer only records.

The case's agent answers with its output model as JSON (`{"answer": "..."}`), so what is
shown while it arrives is the part of the "answer" string received so far; a model that
answers in plain prose is shown as it is.
"""

from __future__ import annotations

import json
import re
import threading

_ANSWER_KEY = re.compile(r'"answer"\s*:\s*"')
_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*")


class AnswerBuffer:
    """The current request's text and the tools run so far, safe to read from another thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self._tools: list[str] = []
        self.version = 0

    def begin(self) -> None:
        with self._lock:
            if self._parts:
                self._parts = []
                self.version += 1

    def delta(self, text: str) -> None:
        with self._lock:
            self._parts.append(text)
            self.version += 1

    def tool(self, name: str) -> None:
        with self._lock:
            self._tools.append(name)
            self.version += 1

    def snapshot(self) -> tuple[int, str, list[str]]:
        with self._lock:
            return self.version, "".join(self._parts), list(self._tools)


def answer_preview(raw: str) -> str:
    """What to show of a partly received answer: the "answer" value so far if the text is the
    JSON object the agent answers with, nothing while only its opening has arrived, or the
    text itself if it is prose."""
    text = _FENCE.sub("", raw, count=1)
    if not text.lstrip().startswith("{"):
        return raw.strip() if not raw.lstrip().startswith("```") else ""
    match = _ANSWER_KEY.search(text)
    if match is None:
        return ""
    return _partial_string(text[match.end():])


def _partial_string(rest: str) -> str:
    """A JSON string's characters up to its closing quote or the end of what arrived, decoded;
    an escape cut in half at the end is left for the next piece."""
    out, i = [], 0
    while i < len(rest):
        ch = rest[i]
        if ch == '"':
            break
        if ch == "\\":
            if i + 1 >= len(rest):
                break
            if rest[i + 1] == "u":
                if i + 6 > len(rest):
                    break
                out.append(rest[i:i + 6])
                i += 6
                continue
            out.append(rest[i:i + 2])
            i += 2
            continue
        out.append(ch)
        i += 1
    body = "".join(out)
    try:
        return json.loads(f'"{body}"', strict=False)
    except ValueError:  # a lone surrogate half of a pair, cut: show the rest
        return json.loads(f'"{body.rsplit(chr(92) + "u", 1)[0]}"', strict=False)
