"""The triggers that keep the dashboard's roll-ups (CaseDay, OpenCaseHour and DecisionDay in
casework/cases/models.py), for PostgreSQL and SQLite, installed by migration 0008.

In the database, so that every writer counts: services, bulk inserts, queryset updates, the
admin, imports, a cascade. Each change of a case (cases_case) or a final decision
(cases_decision) takes its old row out of the counters (UPDATE, DELETE) and puts its new row
in (INSERT, UPDATE), in the writer's own transaction; an update that changes none of the
columns counted is skipped. Days and hours are UTC. A decision's verdict is not the
database's to judge: the decision services store it (rollup.decision_recorded), an UPDATE the
trigger moves the count for.
"""

from __future__ import annotations

# The columns the counters read: an UPDATE of others (title, assignee ...) is skipped.
COUNTED = ("case_type", "status", "priority", "created_at", "closed_at", "sla_breached_at", "due_at",
           "sla_paused_at")
DECISION_COUNTED = ("final", "verdict", "decided_at", "case_id")
DONE = "('resolved', 'closed')"  # casework.cases.sla.DONE_STATUSES
NEVER_DUE = "9999-12-31 00:00:00"  # casework.cases.models.NEVER_DUE

POSTGRESQL = [f"""
CREATE OR REPLACE FUNCTION cases_rollup_bump(c cases_case, delta integer) RETURNS void AS $$
DECLARE
    v_hour timestamptz;
    v_due timestamptz;
    v_kind text;
    v_at timestamptz;
BEGIN
    FOREACH v_kind IN ARRAY ARRAY['opened', 'decided', 'breached'] LOOP
        v_at := CASE v_kind WHEN 'opened' THEN c.created_at WHEN 'decided' THEN c.closed_at
                        ELSE c.sla_breached_at END;
        IF v_at IS NOT NULL THEN
            INSERT INTO cases_caseday (day, case_type, kind, n)
            VALUES ((v_at AT TIME ZONE 'UTC')::date, c.case_type, v_kind, delta)
            ON CONFLICT ON CONSTRAINT caseday_key DO UPDATE SET n = cases_caseday.n + EXCLUDED.n;
        END IF;
    END LOOP;
    IF c.status IN {DONE} THEN
        RETURN;
    END IF;
    v_hour := date_trunc('hour', c.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    IF c.due_at IS NULL OR c.sla_paused_at IS NOT NULL THEN
        v_due := '{NEVER_DUE}+00';
    ELSE
        v_due := date_trunc('hour', c.due_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    END IF;
    INSERT INTO cases_opencasehour (case_type, status, priority, created_hour, due_hour, n)
    VALUES (c.case_type, c.status, c.priority, v_hour, v_due, delta)
    ON CONFLICT ON CONSTRAINT opencasehour_key
    DO UPDATE SET n = cases_opencasehour.n + EXCLUDED.n;
    IF delta < 0 THEN
        DELETE FROM cases_opencasehour WHERE case_type = c.case_type AND status = c.status
            AND priority = c.priority AND created_hour = v_hour AND due_hour = v_due AND n = 0;
    END IF;
END
$$ LANGUAGE plpgsql;
""", """
CREATE OR REPLACE FUNCTION cases_rollup_trigger() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM cases_rollup_bump(OLD, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM cases_rollup_bump(NEW, 1);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
""",
    "CREATE TRIGGER cases_rollup_insert_delete AFTER INSERT OR DELETE ON cases_case "
    "FOR EACH ROW EXECUTE FUNCTION cases_rollup_trigger();",
    "CREATE TRIGGER cases_rollup_update AFTER UPDATE ON cases_case FOR EACH ROW WHEN ("
    + " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in COUNTED)
    + ") EXECUTE FUNCTION cases_rollup_trigger();",
    """
CREATE OR REPLACE FUNCTION cases_decision_bump(d cases_decision, delta integer) RETURNS void AS $$
DECLARE
    v_type text;
BEGIN
    IF NOT d.final THEN
        RETURN;
    END IF;
    SELECT case_type INTO v_type FROM cases_case WHERE id = d.case_id;
    IF v_type IS NULL THEN
        RETURN;  -- the case went first (a raw cascade): its day's count is recounted, not guessed
    END IF;
    INSERT INTO cases_decisionday (day, case_type, verdict, n)
    VALUES ((d.decided_at AT TIME ZONE 'UTC')::date, v_type, d.verdict, delta)
    ON CONFLICT ON CONSTRAINT decisionday_key DO UPDATE SET n = cases_decisionday.n + EXCLUDED.n;
END
$$ LANGUAGE plpgsql;
""", """
CREATE OR REPLACE FUNCTION cases_decision_trigger() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM cases_decision_bump(OLD, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM cases_decision_bump(NEW, 1);
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
""",
    "CREATE TRIGGER cases_decision_insert_delete AFTER INSERT OR DELETE ON cases_decision "
    "FOR EACH ROW EXECUTE FUNCTION cases_decision_trigger();",
    "CREATE TRIGGER cases_decision_update AFTER UPDATE ON cases_decision FOR EACH ROW WHEN ("
    + " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in DECISION_COUNTED)
    + ") EXECUTE FUNCTION cases_decision_trigger();",
]

POSTGRESQL_DROP = [
    "DROP TRIGGER IF EXISTS cases_decision_insert_delete ON cases_decision;",
    "DROP TRIGGER IF EXISTS cases_decision_update ON cases_decision;",
    "DROP FUNCTION IF EXISTS cases_decision_trigger();",
    "DROP FUNCTION IF EXISTS cases_decision_bump(cases_decision, integer);",
    "DROP TRIGGER IF EXISTS cases_rollup_insert_delete ON cases_case;",
    "DROP TRIGGER IF EXISTS cases_rollup_update ON cases_case;",
    "DROP FUNCTION IF EXISTS cases_rollup_trigger();",
    "DROP FUNCTION IF EXISTS cases_rollup_bump(cases_case, integer);",
]


def _sqlite_bump(row: str, delta: int) -> str:
    """The statements of a SQLite trigger body for one row (OLD or NEW); SQLite has no
    functions to share, so each trigger repeats them."""
    day = "date({at})"
    statements = []
    for kind, column in (("opened", "created_at"), ("decided", "closed_at"), ("breached", "sla_breached_at")):
        at = f"{row}.{column}"
        # "WHERE" after the SELECT: SQLite's parser needs it before ON CONFLICT.
        statements.append(
            f"INSERT INTO cases_caseday (day, case_type, kind, n) SELECT {day.format(at=at)}, {row}.case_type, "
            f"'{kind}', {delta} WHERE {at} IS NOT NULL "
            f"ON CONFLICT (day, case_type, kind) DO UPDATE SET n = n + excluded.n;")
    hour = f"strftime('%Y-%m-%d %H:00:00', {row}.created_at)"
    due = (f"CASE WHEN {row}.due_at IS NULL OR {row}.sla_paused_at IS NOT NULL THEN '{NEVER_DUE}' "
           f"ELSE strftime('%Y-%m-%d %H:00:00', {row}.due_at) END")
    statements.append(
        f"INSERT INTO cases_opencasehour (case_type, status, priority, created_hour, due_hour, n) "
        f"SELECT {row}.case_type, {row}.status, {row}.priority, {hour}, {due}, {delta} "
        f"WHERE {row}.status NOT IN {DONE} "
        f"ON CONFLICT (case_type, status, priority, created_hour, due_hour) DO UPDATE SET n = n + excluded.n;")
    if delta < 0:
        statements.append(
            f"DELETE FROM cases_opencasehour WHERE case_type = {row}.case_type AND status = {row}.status "
            f"AND priority = {row}.priority AND created_hour = {hour} AND due_hour = {due} AND n = 0;")
    return "\n".join(statements)


def _sqlite_decision(row: str, delta: int) -> str:
    return (f"INSERT INTO cases_decisionday (day, case_type, verdict, n) SELECT date({row}.decided_at), "
            f"c.case_type, {row}.verdict, {delta} FROM cases_case c WHERE c.id = {row}.case_id AND {row}.final "
            f"ON CONFLICT (day, case_type, verdict) DO UPDATE SET n = n + excluded.n;")


SQLITE = [
    f"CREATE TRIGGER IF NOT EXISTS cases_rollup_insert AFTER INSERT ON cases_case BEGIN\n{_sqlite_bump('NEW', 1)}\nEND;",
    f"CREATE TRIGGER IF NOT EXISTS cases_rollup_delete AFTER DELETE ON cases_case BEGIN\n{_sqlite_bump('OLD', -1)}\nEND;",
    "CREATE TRIGGER IF NOT EXISTS cases_rollup_update AFTER UPDATE ON cases_case WHEN "
    + " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in COUNTED)
    + f" BEGIN\n{_sqlite_bump('OLD', -1)}\n{_sqlite_bump('NEW', 1)}\nEND;",
    f"CREATE TRIGGER IF NOT EXISTS cases_decision_insert AFTER INSERT ON cases_decision BEGIN\n{_sqlite_decision('NEW', 1)}\nEND;",
    f"CREATE TRIGGER IF NOT EXISTS cases_decision_delete AFTER DELETE ON cases_decision BEGIN\n{_sqlite_decision('OLD', -1)}\nEND;",
    "CREATE TRIGGER IF NOT EXISTS cases_decision_update AFTER UPDATE ON cases_decision WHEN "
    + " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in DECISION_COUNTED)
    + f" BEGIN\n{_sqlite_decision('OLD', -1)}\n{_sqlite_decision('NEW', 1)}\nEND;",
]

SQLITE_DROP = [f"DROP TRIGGER IF EXISTS cases_{table}_{op};" for table in ("rollup", "decision")
               for op in ("insert", "delete", "update")]


def sqlite_reinstall(sender, using: str = "default", **kwargs) -> None:
    """post_migrate: put SQLite's triggers back. SQLite alters a table by copying it into a new
    one (Django's table remake), which drops the old table's triggers with it: a later
    migration of cases_case or cases_decision would silently stop the counters. IF NOT EXISTS:
    nothing happens when they are there. (PostgreSQL keeps triggers across ALTER TABLE.)"""
    from django.db import connections

    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    tables = connection.introspection.table_names()
    if "cases_caseday" not in tables or "cases_decisionday" not in tables:
        return  # before migration 0008
    with connection.cursor() as cursor:
        for statement in SQLITE:
            cursor.execute(statement)


def install(schema_editor) -> None:
    for statement in POSTGRESQL if schema_editor.connection.vendor == "postgresql" else SQLITE:
        schema_editor.execute(statement, params=None)


def uninstall(schema_editor) -> None:
    for statement in POSTGRESQL_DROP if schema_editor.connection.vendor == "postgresql" else SQLITE_DROP:
        schema_editor.execute(statement, params=None)
