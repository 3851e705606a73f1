"""Access changes: the organisation's reference data, the change under investigation (an HR
mutation, one per case), and what the investigation produces (rights-check evidence,
requests to people and their answers, agent-to-agent messages, advisory reports).
Notifications are the shared ones (casework/cases/notifications), each request's through
InfoRequest.notifications.

Reference data mirrors the seed's CSV files (docs/access_data.md lists every column);
it is imported with `manage.py import_access_data` and editable in the admin.

records.py    the reference data: levels, systems, roles, employees, authorisations, absences
mutations.py  the HR mutation under investigation and its rights check
requests.py   requests to people, the employee's claim, the manager's verdict
reports.py    the advisory report and agent messages
"""

from casework.access.models.mutations import HRMutation, RightsCheck
from casework.access.models.records import (
    Absence,
    AccessLevel,
    DirectAuthorisation,
    Employee,
    Role,
    RoleAuthorisation,
    SickLeave,
    System,
    Vacation,
)
from casework.access.models.reports import AdvisoryReport, AgentMessage
from casework.access.models.requests import (
    EmployeeClaim,
    InfoRequest,
    ManagerVerdict,
    _nonce,  # noqa: F401 - migration 0001 names it here
)

__all__ = [
    "Absence", "AccessLevel", "AdvisoryReport", "AgentMessage", "DirectAuthorisation", "Employee", "EmployeeClaim",
    "HRMutation", "InfoRequest", "ManagerVerdict", "RightsCheck", "Role", "RoleAuthorisation", "SickLeave", "System",
    "Vacation",
]
