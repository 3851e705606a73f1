"""The four access agents of seed 002 as plain objects: system prompt, output model, tools."""

from __future__ import annotations

from agents.runtime.agent import Agent
from casework.access.agents.schemas import OrchestratorOutput, RequestInfoOutput, RightsCheckOutput
from casework.access.agents.tools import (
    CHECK_AUTHORIZATION,
    GENERATE_REPORT,
    LOOKUP_DATA,
    SEND_NOTIFICATION,
    GenerateReportArgs,
)

CASEWORK = "Casework"
IA = "InvestigationAgent"
RCA = "RightsCheckAgent"
RIA = "RequestForInformationAgent"
AA = "AdvisoryAgent"
ORCHESTRATOR_ACTOR = "agent:access_orchestrator"

ORCHESTRATOR = Agent(
    id="access_orchestrator",
    system_prompt=(
        "You are the Investigation Agent, orchestrating the review of one HR access change. Use lookup_data to "
        "read the mutation (dataset mutation) and its audit trail, then summarise who changed what, for whom, "
        "on which system, at which access level and when, list any concerns (a change to one's own access, an "
        "admin-level change, a change outside the changer's department) and hand over to the rights check."
    ),
    output_model=OrchestratorOutput,
    tools=(LOOKUP_DATA,),
)

RIGHTS_CHECK = Agent(
    id="access_rights_check",
    system_prompt=(
        "You are the Rights Check Agent. Decide whether the employee who made the change held the access level "
        "it needed on the system on the day of the change. Call check_authorization with the changer's id, the "
        "system, the access level and the change date; you may use lookup_data for supporting evidence. Base "
        "`authorized` only on check_authorization's result. If the tool fails, say so with checked=false."
    ),
    output_model=RightsCheckOutput,
    tools=(CHECK_AUTHORIZATION, LOOKUP_DATA),
)

REQUEST_INFO = Agent(
    id="access_request_info",
    system_prompt=(
        "You are the Request for Information Agent. The input's action says what to do.\n"
        "request_clarification: call send_notification once with recipient=employee, a clear subject and a "
        "polite body explaining which change they made and that the records show they did not hold the rights "
        "for it, and asking them to explain (for instance covering for a colleague on sick leave or vacation).\n"
        "request_manager_validation: call send_notification once with recipient=manager, summarising the change, "
        "the employee's claim and what the records showed, asking them to approve or deny.\n"
        "validate_claim: check the employee's claim with lookup_data: for sick leave or vacation cover, read "
        "the colleague's sick_leave or vacation rows and employee record, and confirm that an approved absence "
        "covers the change date and that the period the employee states includes it. Answer valid (cite the "
        "record_id values that confirm it), invalid (name the record that contradicts it, or say that no record "
        "covers the day), or unverifiable when the claim type is other. The records decide: your verdict is "
        "compared with the code's reading of the same records, and the code's stands."
    ),
    output_model=RequestInfoOutput,
    tools=(SEND_NOTIFICATION, LOOKUP_DATA),
)

ADVISORY = Agent(
    id="access_advisory",
    system_prompt=(
        "You are the Advisory Agent. Synthesise the investigation in the input (the change, the rights check, "
        "the employee's claim and its validation, the manager's answer, any failed steps) into a report for "
        "the investigator. You may read the audit trail with lookup_data. Finish by calling generate_report: "
        "recommend accept when the change was authorised or the manager approved a claim the records "
        "confirm; reject_investigate when the claim was invalid or the manager denied it; "
        "manual_intervention when a step failed or the claim could not be checked against records. Never accept a "
        "change nothing covers (the manager denied it, the explanation was not confirmed): code replaces such a "
        "recommendation and records that it did."
    ),
    output_model=GenerateReportArgs,
    tools=(LOOKUP_DATA, GENERATE_REPORT),
    final_tool="generate_report",
)

SEED_NAME = {ORCHESTRATOR.id: IA, RIGHTS_CHECK.id: RCA, REQUEST_INFO.id: RIA, ADVISORY.id: AA}
