"""The access agents' output models (the advisory agent's is generate_report's arguments)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class OrchestratorOutput(BaseModel):
    mutation_id: str = Field(description="The mutation under investigation.")
    summary: str = Field(description="One paragraph: who changed what, for whom, on which system, at which level, when.")
    concerns: list[str] = Field(default_factory=list, description="Anything that makes the change risky, one per item.")
    next_action: Literal["check_rights"] = Field(description="The next step of the investigation.")


class RightsCheckOutput(BaseModel):
    checked: bool = Field(description="True when check_authorization returned a result.")
    authorized: bool = Field(description="Whether the changer held the needed level on the system on the day.")
    held_level: str = Field(default="", description="The highest level they held on the system that day, if any.")
    covering_references: list[str] = Field(default_factory=list, description="Authorisation or role ids that cover the change.")
    message: str = Field(description="A short explanation an investigator can read.")


class ClaimCheck(BaseModel):
    check: str = Field(description="What was checked.")
    passed: bool
    detail: str = Field(description="What the records show.")


class RequestInfoOutput(BaseModel):
    action: Literal["request_clarification", "request_manager_validation", "validate_claim"] = Field(
        description="What this call did (the action it was given).")
    notified: bool = Field(default=False, description="For a request: whether send_notification succeeded.")
    request_id: int | None = Field(default=None, description="The request send_notification returned.")
    claim_status: Literal["valid", "invalid", "unverifiable"] | None = Field(default=None, description=(
        "For validate_claim: valid when the records confirm the claim, invalid when they contradict it, "
        "unverifiable when no record can confirm or contradict it (claim type other)."))
    checks: list[ClaimCheck] = Field(default_factory=list, description="For validate_claim: each check made.")
    cited_records: list[str] = Field(default_factory=list, description=(
        "For a valid claim: the record_id values (e.g. sick_leave:12) from lookup_data that confirm it."))
    message: str = Field(description="A short explanation an investigator can read.")
