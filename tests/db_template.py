"""The test databases copied from a migrated template instead of migrated one by one (PostgreSQL).

Migrating an empty database costs about 13 s of CPU, and a run did it four times: once per
pytest-xdist worker, again for the evaluations' throwaway database (agents/evals/isolation.py)
in tests/evals/test_command.py, and in the sixth case type's own process
(tests/sixth_type/test_sixth_type.py, whose INSTALLED_APPS give it a template of its own). Here the first process that needs it migrates a template
database once, named for a digest of what migrating depends on, and every test database is
then made from it with PostgreSQL's `CREATE DATABASE ... TEMPLATE` (Django's TEST["TEMPLATE"]),
a file copy; Django's migrate still runs on the copy, finds nothing to apply, and adds any
content type or permission a model gained since.

The digest covers every installed app's migration files, the project modules those migrations
import, Django's version and INSTALLED_APPS: a changed or new migration names a new template,
which is built afresh; an older template of the same test database is dropped then. Building
happens under an advisory lock on the server, so two workers (or two runs) starting together
build it once, and under a temporary name renamed when done, so a build that died half way is
never used. On SQLite nothing changes.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from pathlib import Path

from django.conf import settings

# Bumped when what a template holds changes other than through the digest's inputs.
FORMAT = "1"
# pg_advisory_lock key: "casework test template".
_LOCK_KEY = 0x43575454_4D504C54 & 0x7FFFFFFF_FFFFFFFF
# A dotted name a migration imports from the project (`from casework.db_indexes import ...`,
# `import casework.outbox.models`).
_PROJECT_IMPORT = re.compile(r"^\s*(?:from|import)\s+((?:casework|agents|audit)(?:\.\w+)*)", re.M)


def _migration_files() -> list[Path]:
    from django.apps import apps
    from django.db.migrations.loader import MigrationLoader

    files = []
    for app in apps.get_app_configs():
        module_name, _explicit = MigrationLoader.migrations_module(app.label)
        if module_name is None:
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for folder in getattr(module, "__path__", []):
            files += sorted(Path(folder).glob("*.py"))
    return files


def _module_files(dotted: str) -> list[Path]:
    """The source files of a project module (a package's own modules too), or none (a name
    imported from a module)."""
    path = Path(settings.BASE_DIR).joinpath(*dotted.split("."))
    if path.with_suffix(".py").is_file():
        return [path.with_suffix(".py")]
    if (path / "__init__.py").is_file():
        return sorted(path.glob("*.py"))
    return []


def template_digest() -> str:
    """A digest of what a migrated database depends on."""
    import django

    digest = hashlib.sha256(f"{FORMAT}|{django.get_version()}|{settings.INSTALLED_APPS}".encode())
    imported: set[Path] = set()
    for path in _migration_files():
        text = path.read_bytes()
        digest.update(f"\0{path.parent.parent.name}/{path.name}\0".encode())
        digest.update(text)
        for dotted in _PROJECT_IMPORT.findall(text.decode("utf-8", "replace")):
            while dotted and not (found := _module_files(dotted)):
                dotted = dotted.rpartition(".")[0]
            imported.update(found)
    for path in sorted(imported):
        digest.update(f"\0{path.relative_to(settings.BASE_DIR)}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def use_migrated_template() -> str | None:
    """Make sure the migrated template exists and have test databases made from it; return its
    name (None on SQLite)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    test_settings = connection.settings_dict.setdefault("TEST", {})
    # The run's database name without pytest-xdist's worker suffix: test_casework, not _gw0.
    base = f"test_{settings.DATABASES['default']['NAME']}"
    base = re.sub(r"_gw\d+$", "", test_settings.get("NAME") or base)
    if len(base) > 30:  # PostgreSQL's names stop at 63 bytes: a long one is shortened, told apart by a digest
        base = f"{base[:21]}_{hashlib.sha256(base.encode()).hexdigest()[:8]}"
    prefix = f"{base}_template_"
    name = f"{prefix}{template_digest()}"
    quote = connection.ops.quote_name
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [_LOCK_KEY])
        try:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            if cursor.fetchone() is None:
                _build(cursor, name)
                cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                               [prefix.replace("_", r"\_") + "%", name])
                for (old,) in cursor.fetchall():
                    cursor.execute(f"DROP DATABASE IF EXISTS {quote(old)}")
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK_KEY])
    test_settings["TEMPLATE"] = name
    return name


def _build(cursor, name: str) -> None:
    """Migrate a new database under a temporary name, then give it `name`."""
    from django.core.management import call_command
    from django.db import connection

    quote = connection.ops.quote_name
    building = f"{name}_new"
    cursor.execute(f"DROP DATABASE IF EXISTS {quote(building)}")
    cursor.execute(f"CREATE DATABASE {quote(building)}")
    real_name = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = building
    try:
        call_command("migrate", verbosity=0, interactive=False, run_syncdb=True)
    finally:
        connection.close()
        connection.settings_dict["NAME"] = real_name
    cursor.execute(f"ALTER DATABASE {quote(building)} RENAME TO {quote(name)}")
