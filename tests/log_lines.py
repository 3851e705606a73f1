"""The JSON log lines a block writes, as production writes them: a handler on the root logger
with settings.LOGGING's `json` formatter and `context` filter (audit/logs.py), whatever
LOG_FORMAT the console has here. Each line is parsed back, so a test reads what a log store
would."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import logging.config
from collections.abc import Iterator

from django.conf import settings


class LogLines:
    def __init__(self, stream: io.StringIO):
        self._stream = stream

    def all(self) -> list[dict]:
        return [json.loads(line) for line in self._stream.getvalue().splitlines() if line.strip()]

    def where(self, **fields) -> list[dict]:
        return [line for line in self.all() if all(line.get(k) == v for k, v in fields.items())]


@contextlib.contextmanager
def json_log_lines() -> Iterator[LogLines]:
    configurator = logging.config.DictConfigurator(settings.LOGGING)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(configurator.configure_formatter(dict(settings.LOGGING["formatters"]["json"])))
    handler.addFilter(configurator.configure_filter(dict(settings.LOGGING["filters"]["context"])))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield LogLines(stream)
    finally:
        root.removeHandler(handler)
