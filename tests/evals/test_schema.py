"""Scenario files are validated; a broken one is refused naming the file and the field."""

from __future__ import annotations

import pytest

from agents.evals.schema import ScenarioFileError, load_suite, suite_names, suite_types

GOOD = """id: ok
category: low
input: {release_id: r1}
expect: {fields: {detective.severity: low}}
"""


def write(tmp_path, name, text, suite="release_risk"):
    folder = tmp_path / suite
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)


def test_a_good_file_loads(tmp_path):
    write(tmp_path, "ok.yaml", GOOD)
    [scenario] = load_suite("release_risk", root=tmp_path)
    assert scenario.expect.fields == {"detective.severity": "low"}


@pytest.mark.parametrize(("text", "field"), [
    (GOOD.replace("category: low\n", ""), "category"),
    (GOOD + "expectations: {}\n", "expectations"),
    (GOOD.replace("expect: {fields: {detective.severity: low}}", "expect: {tools_in_order: get_summary}"),
     "expect.tools_in_order"),
    (GOOD + "faults: [{target: llm, name: detective, kind: explode}]\n", "faults.0.kind"),
    (GOOD.replace("id: ok", "id: Not An Id"), "id"),
    ("id: ok\ncategory: [unclosed, x\n", "line 3"),
])
def test_a_broken_file_is_refused_naming_file_and_field(tmp_path, text, field):
    write(tmp_path, "broken.yaml", text)
    with pytest.raises(ScenarioFileError) as caught:
        load_suite("release_risk", root=tmp_path)
    assert caught.value.path == "release_risk/broken.yaml"
    assert caught.value.field == field
    assert str(caught.value).startswith(f"release_risk/broken.yaml: {field}: ")


def test_two_files_with_one_id_are_refused(tmp_path):
    write(tmp_path, "a.yaml", GOOD)
    write(tmp_path, "b.yaml", GOOD)
    with pytest.raises(ScenarioFileError, match="b.yaml: id: 'ok' is also the id in release_risk/a.yaml"):
        load_suite("release_risk", root=tmp_path)


def test_every_committed_suite_loads():
    names = suite_names()
    assert names
    for name in names:
        assert name in suite_types()
        assert load_suite(name)


def test_the_suites_are_the_types_that_registered_an_evaluation():
    # Derived from the registry (casework.cases.types.Evaluation), in the types' order.
    assert suite_types() == ["fraud_alert", "support_ticket", "access_change", "transaction_investigation",
                             "release_risk"]


def test_each_suite_is_in_its_own_types_package():
    # The files live beside the type's code (casework/<type>/scenarios/), not in agents/.
    from importlib import import_module
    from pathlib import Path

    from agents.evals.adapters import evaluation_of
    from agents.evals.schema import suite_folder

    for name in suite_types():
        package = evaluation_of(name).submit.__module__.rpartition(".")[0]
        folder = suite_folder(name)
        assert folder == Path(import_module(package).__file__).resolve().parent / "scenarios", name
        assert folder.is_dir(), name
