"""Each pytest-xdist worker process keeps to its own files and broker (loaded with
`-p tests.xdist_worker` from pyproject.toml, before pytest-env and pytest-django read the
environment, so the settings and every worker subprocess a test starts see the same values).

- VAR_DIR: <VAR_DIR>/<worker id>: the SQLite test database, the filesystem broker's queues,
  traces, checkpoints and media of one worker are never another's.
- CELERY_BROKER_URL on Redis: one database per worker, counted down from the one given
  (CI's /15: gw0 on 15, gw1 on 14 ...), so a real worker a test starts takes only its own
  test process's messages. Redis here has databases 0 to 15.
- PostgreSQL needs nothing: pytest-django gives each worker its own test database
  (test_casework_gw0 ...).
Outside xdist (`-n 0`, or one test run by hand) nothing changes."""

from __future__ import annotations

import os
import re

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker:
    _index = int(_worker.removeprefix("gw"))
    os.environ["VAR_DIR"] = os.path.join(os.environ.get("VAR_DIR", "var/test"), _worker)
    _broker = os.environ.get("CELERY_BROKER_URL", "")
    _redis = re.fullmatch(r"(rediss?://[^/]*)/(\d+)", _broker)
    if _redis:
        _db = int(_redis.group(2)) - _index
        if _db < 0:
            raise RuntimeError(f"{_worker}: no Redis database left below {_redis.group(2)} for this worker")
        os.environ["CELERY_BROKER_URL"] = f"{_redis.group(1)}/{_db}"
