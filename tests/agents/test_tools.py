"""Tools: a registry that refuses duplicates, and execution that turns every failure into a
result the model sees (ToolNotFound, InvalidArguments, ToolExecution, ToolTimeout)."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel, Field

from agents.llm.base import ToolCall
from agents.runtime.prompting import unfence_data
from agents.runtime.tools import Tool, ToolRegistry


class CustomerQuery(BaseModel):
    customer_id: str = Field(description="The customer's reference, e.g. C-1.")
    months: int = Field(default=3, ge=1, le=24, description="How far back to look.")


class CustomerHistory(BaseModel):
    customer_id: str
    chargebacks: int


def history(args: CustomerQuery) -> CustomerHistory:
    """A customer's chargebacks over the last months."""
    return CustomerHistory(customer_id=args.customer_id, chargebacks=args.months // 3)


def broken(args: CustomerQuery) -> dict:
    raise ConnectionError("ledger service unreachable")


customer_history = Tool("customer_history", "A customer's chargebacks.", CustomerQuery, history, consequence="read_only")


def registry(*extra: Tool) -> ToolRegistry:
    return ToolRegistry([customer_history, *extra])


def test_the_registry_refuses_a_second_tool_with_the_same_name():
    reg = registry()
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Tool("customer_history", "Another.", CustomerQuery, broken, consequence="read_only"))
    with pytest.raises(ValueError):
        ToolRegistry([customer_history, customer_history])


def test_a_tool_spec_carries_the_pydantic_json_schema():
    (spec,) = registry().specs()
    assert spec.name == "customer_history"
    assert spec.description == "A customer's chargebacks."
    assert spec.parameters["required"] == ["customer_id"]
    assert spec.parameters["properties"]["months"]["maximum"] == 24
    assert spec.parameters["properties"]["customer_id"]["description"].startswith("The customer's reference")


def test_valid_arguments_run_the_handler_and_a_model_result_is_dumped():
    outcome = registry().execute(ToolCall("c1", "customer_history", {"customer_id": "C-1", "months": 6}))

    assert outcome.success
    assert outcome.content == {"customer_id": "C-1", "chargebacks": 2}
    assert outcome.error_type == ""
    assert unfence_data(outcome.as_message_content()) == {"customer_id": "C-1", "chargebacks": 2}


def test_an_unknown_tool_is_tool_not_found_naming_the_ones_there_are():
    outcome = registry().execute(ToolCall("c1", "delete_everything", {}))

    assert not outcome.success
    assert outcome.error_type == "ToolNotFound"
    assert "customer_history" in outcome.content
    assert unfence_data(outcome.as_message_content())["error"] == "ToolNotFound"


@pytest.mark.parametrize("arguments", [
    {"customer_id": "C-1", "months": "lots"},
    {"customer_id": "C-1", "months": 99},
    {"months": 3},
    {"customer_id": ["C-1"]},
])
def test_arguments_of_the_wrong_type_or_out_of_range_are_invalid_arguments(arguments):
    ran = []
    tool = Tool("probe", "Probe.", CustomerQuery, lambda args: ran.append(args), consequence="read_only")
    outcome = ToolRegistry([tool]).execute(ToolCall("c1", "probe", arguments))

    assert not outcome.success
    assert outcome.error_type == "InvalidArguments"
    assert outcome.content.startswith("Invalid arguments for probe:")
    assert ran == []  # the handler never saw them


def test_arguments_that_are_not_json_are_invalid_arguments():
    outcome = registry().execute(ToolCall("c1", "customer_history", {}, raw_arguments='{"customer_id": "C-1"'))

    assert outcome.error_type == "InvalidArguments"
    assert "not valid JSON" in outcome.content


def test_a_handler_that_raises_is_a_tool_execution_result():
    outcome = registry(Tool("ledger", "Ledger.", CustomerQuery, broken, consequence="read_only")).execute(
        ToolCall("c1", "ledger", {"customer_id": "C-1"}))

    assert not outcome.success
    assert outcome.error_type == "ToolExecution"
    assert "ConnectionError: ledger service unreachable" in outcome.content


def test_a_handler_past_its_timeout_is_a_tool_timeout_result():
    # The handler finishes only when the test lets it: after execute() has returned, so
    # execute() returning at all shows it did not wait for the handler (no clock involved).
    release, finished = threading.Event(), threading.Event()

    def stuck(args: CustomerQuery) -> dict:
        try:
            release.wait(timeout=30)  # only a broken execute() (one that waits) makes this run out
            return {"late": True}
        finally:
            finished.set()

    reg = registry(Tool("stuck", "Stuck.", CustomerQuery, stuck, timeout=0.1, consequence="read_only"))

    outcome = reg.execute(ToolCall("c1", "stuck", {"customer_id": "C-1"}))

    handler_was_running = not finished.is_set()
    release.set()
    assert handler_was_running  # the caller did not wait for the handler
    assert not outcome.success
    assert outcome.error_type == "ToolTimeout"
    assert "did not finish within 0.1 s" in outcome.content
    assert finished.wait(timeout=30)  # the handler ran on, its result discarded
