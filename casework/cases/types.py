"""The case types: reference prefix, outcomes a decision may take, and what each case-type
package adds to the shared core, registered from its AppConfig.ready: the type itself
(case_type_register), then on its CaseType its tabs, recommendation, lifecycle, decision on a
close, decision effects (its action events), chat tools, evaluation adapter, dashboard panels,
the entities its records name and what its personal data is (retention) (the demo's loader registers with
casework.cases.demo.demo_register). The shared core iterates these; it never imports a type's
package (tests/cases/test_boundary.py), and a new type needs no change here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Tab:
    id: str
    label: str
    template: str


@dataclass(frozen=True)
class Recommendation:
    """What a type's agents recommend, as SQL, and which decisions agree with it (the
    dashboard's agreement between agents and people; casework/cases/dashboard).

    `records(case_ref)` is a queryset of the records holding the agents' recommendation for the
    case `case_ref` (an OuterRef) designates, newest first, annotated with `rec`: the
    recommendation, NULL when none is clear (the dashboard takes the first as a subquery);
    `agrees` maps each recommendation to the decision outcomes that agree with it; `labels`
    names the recommendations for people."""

    records: Callable[[Any], Any]
    agrees: dict[str, tuple[str, ...]]
    labels: dict[str, str]


@dataclass(frozen=True)
class Chat:
    """What a type adds to "Ask the agent" (agents.chat): `tools()` its read-only tools (built
    when first asked for: they may live in its pipeline package), and `context(case)` its
    record's data for the conversation (the ids its tools take); either may be None.
    `offline(question, data, messages)` answers, without a language model, the questions its
    tools can (agents.chat.offline_domain): None when the question is not one of them, else the
    tool calls to make or, once their results are in, the answer's text; `offline_help` says
    which questions those are, in the assistant's help."""

    tools: Callable[[], tuple] | None = None
    context: Callable[[Any], dict] | None = None
    offline: Callable[[str, dict, Any], Any] | None = None
    # What `offline` answers, for the assistant's help ("which tests failed").
    offline_help: str = ""


@dataclass(frozen=True)
class Evaluation:
    """How the evaluation harness (agents.evals) works a type's scenarios and cases.

    `submit(input, reference)` makes the case from a scenario through the type's own services
    (never starting a run itself); `export(record, mask)` turns a decided case's record into a
    scenario's (input, reference, expected fields), `mask(kind, value)` pseudonymising personal
    data; `decision_fields` maps the person's outcome to the fields the agents should have
    reached; `observed(case)` adds the decision fields that live beside the record (a filed
    report ...); `trajectory(case)` replaces the tools-in-order read from the case's runs."""

    submit: Callable[[dict, dict], None]
    export: Callable[[Any, Any], tuple[dict, dict, dict]] | None = None
    decision_fields: dict[str, dict] = field(default_factory=dict)
    observed: Callable[[Any], dict] | None = None
    trajectory: Callable[[Any], list[str]] | None = None
    grounding: Grounding | None = None
    # The folder of its scenario files (agents.evals.schema), in its own package; None: the type
    # has no scenario files (only scenarios stored from the web, if any).
    suite_dir: Any = None
    # The prefixes of its own settings (its agents' thresholds, timeouts ...) that a comparison
    # target may override (agents.evals.matrix, `compare_evals --target`): ("WIDGET",) for WIDGET_*.
    setting_prefixes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grounding:
    """What the groundedness check (agents.evals.grounding) reads of a type's case:
    `statements(case)` the texts its findings or replies state, and `items` which things in
    them must come from the case's input or a tool result: a kind ("test name", "account id")
    -> a regular expression finding them; `numbers` whether every number stated counts too
    (compared by value, at the precision stated, a percentage also as a fraction)."""

    statements: Callable[[Any], list[str]]
    items: dict[str, str] = field(default_factory=dict)
    numbers: bool = False


@dataclass(frozen=True)
class Found:
    """One entity a record names: its kind (casework.entities.kinds), the value as the record
    holds it (normalised, hashed or masked by the entities package, never stored raw where
    the kind is sensitive) and the record's field it came from."""

    kind: str
    value: str
    source_field: str


@dataclass(frozen=True)
class Entities:
    """How a type's records yield entities (casework.entities): `extract(case)` lists what the
    case's record names (reading its record and the rows beside it); `fraud_outcomes` are the
    decision outcomes that confirm fraud, flagging every entity the case names."""

    extract: Callable[[Any], Iterable[Found]]
    fraud_outcomes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Retention:
    """What a type's "personal data" is, for retention (casework.privacy): `purge(case)` blanks or
    deletes its own records' personal data on one case (in the caller's transaction) and returns
    what it removed, {"what": count}; `shared` names the parts the core holds for every case that
    go too ("attachments", "mentions", "agent_calls", "comments", "description", "outbox": its
    e-mails' bodies and events' payloads); `describe`
    says in a line what is removed and what stays (shown in the admin). How long, and from which
    moment, is settings.RETENTION's; `held(case)` gives the same records' data for a subject-access
export; the decision, its outcome and reason stay."""

    purge: Callable[[Any], dict[str, int]]
    shared: tuple[str, ...] = ()
    describe: str = ""
    # `held(case)` the type's own records' data on one case as JSON-able values (the thread,
    # raw mail, a claim ...): what a subject-access export adds for the case (casework.privacy).
    held: Callable[[Any], dict] | None = None
    # Why the type's records must be kept whatever a data subject asks (a law and how long,
    # e.g. "AML record keeping, 5 years (EU AMLD Art. 40)"); "" when none. An erasure keeps such
    # a case's record and decision within its retention period and pseudonymises the subject in
    # it instead of removing it (casework.privacy.erasure).
    legal_duty: str = ""
    # `identifiers(entity)` the strings in clear by which the type's records name the subject an
    # entity designates, beyond the entity's own value (a customer's name and e-mail address, a
    # card holder's name): what an erasure replaces by a pseudonym (casework.privacy.erasure).
    identifiers: Callable[[Any], list[str]] | None = None
    # `accounts(entity)` the ids of the Casework user accounts of the subject an entity
    # designates (an employee who signs in as a manager): an erasure deactivates and
    # pseudonymises them (casework.privacy.erasure).
    accounts: Callable[[Any], list[int]] | None = None
    # `subject_erase(entity)` removes the type's records of the subject that belong to no case
    # (an employee's sick leave and vacation records) and returns {"what": count}; in the
    # erasure's transaction, never for a subject a legal hold keeps.
    subject_erase: Callable[[Any], dict[str, int]] | None = None


@dataclass(frozen=True)
class Panel:
    """A section a type adds to the dashboard (of a manager, or of the team: `audience`):
    `rows(user)` what it lists for them (empty: the section says there is nothing), drawn by
    `template` with `rows`."""

    id: str
    title: str
    template: str
    rows: Callable[[Any], list]
    # Who sees it: "manager" (a manager's own work) or "team" (investigators and admins).
    audience: str = "manager"


def recommends(field: str, values: dict[str, tuple[str, ...]]):
    """The `rec` annotation for Recommendation.records: the recommendation whose values the
    record's `field` holds, NULL (no clear recommendation) otherwise."""
    from django.db.models import Case, CharField, Value, When

    return Case(*[When(**{f"{field}__in": list(held)}, then=Value(rec)) for rec, held in values.items()],
                default=Value(None), output_field=CharField())


@dataclass
class CaseType:
    key: str
    label: str
    prefix: str
    outcomes: tuple[tuple[str, str], ...]
    tabs: list[Tab] = field(default_factory=list)
    # Name of the reverse one-to-one from Case to this type's record (e.g. "fraud_alert").
    record_attr: str = ""
    # Partials that replace the case page's plain overview and decision box when the case
    # has its record (set from the case-type package's AppConfig.ready); "" keeps the plain ones.
    overview_template: str = ""
    decision_template: str = ""
    # The agent pipeline that works this type's cases; the type is offered (demo, queue
    # filter) only while a pipeline of that name is registered.
    pipeline: str = ""
    # Set from the case-type package's AppConfig.ready (case_type_register_recommendation).
    recommendation: Recommendation | None = None
    # The role (casework.people.roles) a person needs to decide this type's cases, besides
    # admins; "" lets every case worker decide.
    decider_role: str = ""
    # The type's own status table (casework.cases.lifecycle), set from its AppConfig.ready.
    lifecycle: Any = None
    # The type's own decision on a close (case_type_register_decide): decide(*, actor, case,
    # outcome, reason) -> Decision, used by the bulk close and the generic close in place of
    # case_close; None: case_close decides.
    decide: Callable[..., Any] | None = None
    chat: Chat | None = None
    evaluation: Evaluation | None = None
    # What a person's decision sets off in other systems: each is called in the decision's
    # transaction, right after case_close wrote it, as effect(*, actor, case, decision), and
    # writes its outgoing action events there (casework.cases.actions.services.action_request), so a
    # decision that rolls back asks for nothing (case_type_register_decision_effect).
    decision_effects: list[Callable[..., Any]] = field(default_factory=list)
    dashboard_panels: list[Panel] = field(default_factory=list)
    entities: Entities | None = None
    retention: Retention | None = None

    def outcome_label(self, outcome: str) -> str:
        if outcome == MERGED_OUTCOME:
            return "Merged into another case (duplicate)"
        return dict(self.outcomes).get(outcome, outcome)


# The decision a merge writes on the case merged away (casework.entities.services.case_merge,
# through casework.cases.services.case_close_merged); no type offers it on its own close, and a
# case closed with it never reopens (case_reopen).
MERGED_OUTCOME = "merged"

# Every case type, in the order they registered: each type's package adds its own row from
# its AppConfig.ready (case_type_register), so the order is INSTALLED_APPS' order. Empty until
# the apps are ready: nothing may read it at import or settings time.
CASE_TYPES: dict[str, CaseType] = {}


def case_type_register(case_type: CaseType) -> CaseType:
    """Add a case type (its key, label, reference prefix, outcomes ...) to the registry, from its
    package's AppConfig.ready, before anything else it registers on it. Registering the same key
    again keeps the first row (a second ready() in tests); another type's prefix is refused, as
    each type counts its references on its own and two would hand out the same ones."""
    known = CASE_TYPES.get(case_type.key)
    if known is not None:
        return known
    clash = next((ct.key for ct in CASE_TYPES.values() if ct.prefix == case_type.prefix), None)
    if clash:
        raise ValueError(f"Case type {case_type.key!r}: prefix {case_type.prefix!r} is {clash!r}'s already.")
    CASE_TYPES[case_type.key] = case_type
    return case_type


def case_type_choices() -> list[tuple[str, str]]:
    """(key, label) of every registered type: Case.case_type's choices, read when asked for (a
    callable, so that a new type needs no migration of the cases app)."""
    return [(ct.key, ct.label) for ct in CASE_TYPES.values()]


# Which pipelines are registered; the agents app sets this at start-up (the case domain
# does not import the agent runtime). Until it does, no case type counts as available.
_pipeline_source: list[Callable[[], Iterable[str]]] = []


def case_types_set_pipeline_source(source: Callable[[], Iterable[str]]) -> None:
    _pipeline_source[:] = [source]


def _registered_pipelines() -> Iterable[str]:
    return _pipeline_source[0]() if _pipeline_source else ()


def case_types_available() -> list[CaseType]:
    """The case types whose pipeline exists, in the table's order: what the demo loads and
    the queue's type filter offers. A type still being built has no cases to show."""
    registered = set(_registered_pipelines())
    return [ct for ct in CASE_TYPES.values() if ct.pipeline and ct.pipeline in registered]


def case_type_choices_available() -> list[tuple[str, str]]:
    return [(ct.key, ct.label) for ct in case_types_available()]


def case_type_register_tab(case_type: str, tab: Tab) -> None:
    tabs = CASE_TYPES[case_type].tabs
    if all(t.id != tab.id for t in tabs):
        tabs.append(tab)


def case_type_register_recommendation(case_type: str, recommendation: Recommendation) -> None:
    CASE_TYPES[case_type].recommendation = recommendation


def case_type_register_lifecycle(case_type: str, lifecycle) -> None:
    """The type's declared lifecycle: on its CaseType, and in the table of every lifecycle
    (the transition service and the diagram page read it there)."""
    from casework.cases.lifecycle import lifecycle_register

    CASE_TYPES[case_type].lifecycle = lifecycle_register(lifecycle)


def case_type_register_decide(case_type: str, decide: Callable[..., Any]) -> None:
    """The type's decision service, for a close made outside its own page (bulk, generic)."""
    CASE_TYPES[case_type].decide = decide


def case_type_register_decision_effect(case_type: str, effect: Callable[..., Any]) -> None:
    effects = CASE_TYPES[case_type].decision_effects
    if effect not in effects:
        effects.append(effect)


def case_type_register_chat(case_type: str, chat: Chat) -> None:
    CASE_TYPES[case_type].chat = chat


def case_type_register_evaluation(case_type: str, evaluation: Evaluation) -> None:
    CASE_TYPES[case_type].evaluation = evaluation


def case_type_register_panel(case_type: str, panel: Panel) -> None:
    panels = CASE_TYPES[case_type].dashboard_panels
    if all(p.id != panel.id for p in panels):
        panels.append(panel)


def case_type_register_entities(case_type: str, entities: Entities) -> None:
    CASE_TYPES[case_type].entities = entities


def case_type_register_retention(case_type: str, retention: Retention) -> None:
    CASE_TYPES[case_type].retention = retention
