"""What encrypting the agents' records at rest costs per call (issue 42). Run by hand:

    DEBUG=true .venv/bin/python bench/field_encryption.py [--repeat 2000]

The runtime writes one AgentCall per agent call (its input and output) and the run's state
after every step, and reads them back on every page and resume. Since agents migration 0012
these are EncryptedJSONField (casework/security/fields.py): JSON text, then Fernet (AES-128-CBC
and HMAC-SHA256, from `cryptography`). This times, in one process and without a database,
what the field adds to a write (get_db_prep_save: JSON and encrypt) and to a read
(from_db_value: decrypt and JSON), beside the plain JSONField's own work for the same value,
for payloads of the sizes the pipelines store: an agent call's input of ~1 KB and output of
~1 KB, a run state of ~4 KB (five agents' results) and ~16 KB (a long tool loop).
The figure goes in bench/README.md by hand ("Encryption at rest").
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casework.settings")
os.environ.setdefault("DEBUG", "true")


def _payload(size: int) -> dict:
    """A JSON object of about `size` bytes, shaped like an agent's result (keys, prose, lists)."""
    item = {"check": "An approved sick leave covers 2025-11-10", "passed": True, "detail": "sick_leave:1",
            "note": "Confirmed by the records: Kees Bakker was on approved sick leave on 2025-11-10."}
    out, n = {"message": "Confirmed.", "checks": []}, 0
    while len(str(out)) < size:
        out["checks"].append({**item, "n": n})
        n += 1
    return out


def _time(fn, repeat: int) -> float:
    """Microseconds per call, the best of three rounds of `repeat` calls."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection, models

    from agents.models import AgentCall, AgentRun

    plain = models.JSONField()
    plain.set_attributes_from_name("plain")
    plain.model = AgentCall
    print(f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores; best of 3 x {args.repeat}")
    print("| value | size | plain JSONField write + read (us) | encrypted write + read (us) | added (us) |")
    print("|---|---|---|---|---|")
    cases = (("agent call input", AgentCall._meta.get_field("input"), 1000),
             ("agent call output", AgentCall._meta.get_field("output"), 1000),
             ("run state", AgentRun._meta.get_field("state"), 4000),
             ("run state, long tool loop", AgentRun._meta.get_field("state"), 16000))
    for label, field, size in cases:
        value = _payload(size)
        stored = field.get_db_prep_save(value, connection)
        stored_plain = plain.get_db_prep_save(value, connection)
        text_plain = stored_plain.dumps(stored_plain.obj) if hasattr(stored_plain, "dumps") else stored_plain
        assert field.from_db_value(stored, None, connection) == value
        enc = _time(lambda f=field, v=value: f.from_db_value(f.get_db_prep_save(v, connection), None, connection),
                    args.repeat)
        base = _time(lambda v=value, t=text_plain: (plain.get_db_prep_save(v, connection),
                                                    plain.from_db_value(t, None, connection)), args.repeat)
        print(f"| {label} | {len(stored)} B stored | {base:.0f} | {enc:.0f} | {enc - base:.0f} |")


if __name__ == "__main__":
    main()
