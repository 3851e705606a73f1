"""The warranty claim's pipeline: one agent, the assessor, in one step; `finish` saves its verdict
through the type's service."""

from __future__ import annotations

import functools
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, register_pipeline
from tests.sixth_type.agents import offline  # noqa: F401 - registers the offline analyst

PIPELINE = "warranty"

PROMPT = """You assess warranty claims. The warranty covers manufacturing defects for 24 months from
purchase; damage the customer caused (a drop, water) is not covered. Give your verdict, covered or
not_covered, and one sentence saying why, quoting the claim."""


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Literal["covered", "not_covered"] = Field(description="Whether the warranty covers the claim.")
    reason: str = Field(min_length=1, max_length=500, description="One sentence quoting the claim.")


@functools.cache
def assessor_agent() -> Agent:
    return Agent(id="warranty_assessor", system_prompt=PROMPT, output_model=Verdict, max_tokens=256)


def _claim(ctx: RunContext):
    from tests.sixth_type.models import WarrantyClaim

    return WarrantyClaim.objects.select_related("case").get(pk=ctx.state["claim_id"])


def _calls(ctx: RunContext) -> list[CallSpec]:
    claim = _claim(ctx)
    return [CallSpec("warranty_assessor", assessor_agent(),
                     {"claim": {k: v for k, v in claim.summary().items() if k not in ("verdict", "verdict_reason")}})]


def _prepare(ctx: RunContext) -> None:
    from tests.sixth_type.services import warranty_assessment_started

    warranty_assessment_started(claim=_claim(ctx))


def _finish(ctx: RunContext) -> None:
    from tests.sixth_type.services import warranty_verdict_file

    output = ctx.output("warranty_assessor")
    if output is not None:
        warranty_verdict_file(claim_id=ctx.state["claim_id"], verdict=output["verdict"], reason=output["reason"])


warranty_pipeline = register_pipeline(Pipeline(
    name=PIPELINE,
    description="Warranty claim (test-only type): the assessor's verdict.",
    modes={"assess": [Stage("assessor", _calls)]},
    prepare=_prepare,
    finish=_finish,
))
