"""Django's SQLite backend, except that flush empties tables without firing their triggers,
as PostgreSQL's TRUNCATE does.

Django flushes SQLite with `DELETE FROM` each table (`manage.py flush`, the test runner
between transactional tests, the evaluations' throwaway database), and a DELETE fires the
table's BEFORE DELETE triggers: the audit trail's append-only trigger (audit migration 0004)
refuses every deletion, so the flush would fail. On PostgreSQL flush is TRUNCATE, which row
triggers do not see (and audit 0002 deliberately adds no TRUNCATE trigger). Here, inside
flush's one transaction, each flushed table's triggers are dropped, the table emptied and the
triggers created again from the SQL SQLite stored for them: DDL that anyone holding the
database file could run, done only where every row of every flushed table goes. Any other
DELETE still meets the triggers. The write lock taken at BEGIN (IMMEDIATE) keeps other
connections from writing while the triggers are gone.
"""

from __future__ import annotations

from itertools import chain

from django.db.backends.sqlite3 import base, operations


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        statements = super().sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        if not tables:
            return statements
        # The tables Django's flush empties (with allow_cascade, those referencing them too).
        flushed = set(chain.from_iterable(self._references_graph(t) for t in tables)) if allow_cascade else set(tables)
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
            triggers = [(name, sql) for name, table, sql in cursor.fetchall() if table in flushed]
        drop = [f"{style.SQL_KEYWORD('DROP TRIGGER')} {style.SQL_FIELD(self.quote_name(name))};" for name, _ in triggers]
        create = [f"{sql};" for _, sql in triggers]
        return drop + statements + create


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
