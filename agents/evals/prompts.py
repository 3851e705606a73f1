"""The prompts a suite's pipeline runs with: its agents' system prompts, the pipeline module's
*PROMPT* strings and its *_agent() builders' prompts (as the settings fill them)."""

from __future__ import annotations

import hashlib
import importlib


def prompt_texts(suite: str) -> list[str]:
    from agents.runtime.pipeline import PIPELINE_MODULES, get_pipeline
    from casework.cases.types import CASE_TYPES as TYPES

    name = TYPES[suite].pipeline
    pipeline = get_pipeline(name)
    texts = [f"{key}:{agent.system_prompt}" for key, agent in sorted(pipeline.agents.items())]
    module = importlib.import_module(PIPELINE_MODULES[name])
    for attr, value in sorted(vars(module).items()):
        if "PROMPT" in attr and isinstance(value, str):
            texts.append(f"{attr}:{value}")
        elif attr.endswith("_agent") and callable(value):
            # An agent built when first used (its prompt quotes settings): detective_agent().
            try:
                texts.append(f"{attr}:{value().system_prompt}")
            except TypeError:
                pass
    return texts


def prompt_version(suite: str) -> str:
    """A short hash of the suite's pipeline prompts: two runs with one prompt version ran the
    same prompts."""
    return hashlib.sha256("\n".join(prompt_texts(suite)).encode()).hexdigest()[:12]
