"""Turning a model's text into a validated output: raw JSON, fenced blocks, JSON after prose."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class OutputError(Exception):
    """The text holds no JSON object, or the object does not fit the schema."""


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in the text: the whole text, a fenced block, or one after prose."""
    text = (text or "").strip()
    if not text:
        raise OutputError("The model returned an empty answer.")
    candidates = [text] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise OutputError("The answer holds no JSON object.")


def parse_output(text: str, model: type[BaseModel]) -> dict[str, Any]:
    data = extract_json(text)
    try:
        return model.model_validate(data).model_dump(mode="json")
    except PydanticValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()[:10]
        )
        raise OutputError(f"The answer does not fit the schema: {problems}") from exc


def repair_prompt(error: OutputError, model: type[BaseModel]) -> str:
    return (
        f"Your previous answer could not be used. {error}\n"
        "Answer again with only one JSON object that fits this JSON schema, no prose:\n"
        f"{json.dumps(model.model_json_schema())}"
    )
