"""A fake that failed fails its test.

The fakes (LLM servers, webhook receivers, the SMTP server) answer a broken script or a
crashing handler with a 500 or a dropped connection, so that the product sees what a real
peer would send. The product then often copes (a fallback, a retry, a failed result), and a
test asserting on that outcome would pass while the fake itself was broken. So every fake
records what went wrong inside it (`record_error`) and:

- `stop()` / `__exit__` raise FakeServerError for errors nobody has reported yet, unless an
  exception is already on its way out (the test failed already: that failure is the one to read);
- the pytest plugin in this module (`pytest_plugins = ["tests.fakes.guard"]`, or
  `-p tests.fakes.guard`) fails a passing test whose fakes, however started, recorded an error
  that stop() did not already raise: a fake never stopped, or one stopped in a `finally`.
"""

from __future__ import annotations

import sys
import threading
import traceback
import weakref

import pytest


class FakeServerError(AssertionError):
    """A fake server or receiver failed inside itself while the test ran."""


_started: weakref.WeakSet = weakref.WeakSet()
_started_lock = threading.Lock()


class RecordsErrors:
    """Mixed into every fake: `errors` and the check made when it stops."""

    fake_name = "fake"

    def _init_errors(self) -> None:
        self.errors: list[BaseException] = []
        self._reported = 0
        with _started_lock:
            _started.add(self)

    def record_error(self, exc: BaseException) -> None:
        self.errors.append(exc)

    def unreported_errors(self) -> list[BaseException]:
        return self.errors[self._reported:]

    def raise_recorded_errors(self) -> None:
        """Raise FakeServerError for errors not yet reported (each is reported once)."""
        pending = self.unreported_errors()
        if not pending:
            return
        self._reported = len(self.errors)
        raise FakeServerError(describe(self, pending))

    def check_on_stop(self) -> None:
        """stop()'s check: raise, unless the test is already failing with another exception."""
        if sys.exc_info()[1] is None:
            self.raise_recorded_errors()


def describe(fake: RecordsErrors, errors: list[BaseException]) -> str:
    lines = []
    for exc in errors:
        where = "".join(traceback.format_tb(exc.__traceback__)[-1:]).rstrip() if exc.__traceback__ else ""
        lines.append(f"  {type(exc).__name__}: {exc}" + (f"\n{where}" if where else ""))
    return (f"The {fake.fake_name} ({type(fake).__name__}) failed inside itself {len(errors)} time(s); "
            f"what the product saw was the fake's failure, not a peer's answer:\n" + "\n".join(lines))


def _pending() -> list[tuple[RecordsErrors, list[BaseException]]]:
    with _started_lock:
        fakes = list(_started)
    found = []
    for fake in fakes:
        errors = fake.unreported_errors()
        if errors:
            fake._reported = len(fake.errors)
            found.append((fake, errors))
    return found


# --- pytest plugin ----------------------------------------------------------------------


def pytest_runtest_setup(item) -> None:
    # Errors left by an earlier test's fakes belong to it, not to this one.
    _pending()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "setup":
        return
    found = _pending()
    if not found:
        return
    if report.passed:
        report.outcome = "failed"
        report.longrepr = "\n\n".join(describe(fake, errors) for fake, errors in found)
    elif report.failed and call.when == "call":
        # Already failing: say what the fake saw too, as a section of the report.
        report.sections.append(("fake server errors", "\n\n".join(describe(f, e) for f, e in found)))
