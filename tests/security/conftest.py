"""The access fixtures (an employee with a signed link) for the role matrix."""

from tests.access.conftest import asked, mark, org, submit  # noqa: F401 - fixtures re-used here
