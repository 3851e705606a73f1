"""The records an access investigation reads: access levels, systems, roles and what they
authorise, employees, their direct authorisations and absences (sick leave, vacation)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from casework.security.fields import EncryptedDateField


class AccessLevel(models.Model):
    """An access level; a higher rank includes every lower one (Read < Write < Admin)."""

    name = models.CharField(max_length=40, unique=True)
    rank = models.PositiveIntegerField(unique=True)

    class Meta:
        ordering = ["rank"]

    def __str__(self) -> str:
        return self.name


class System(models.Model):
    code = models.CharField(max_length=60, unique=True, help_text="The system's name in the data files, e.g. FinanceApp.")
    description = models.CharField(max_length=200, blank=True)
    # When a system's authorisation registry cannot be queried, check_authorization fails
    # for it (and the investigation goes to manual intervention after three attempts).
    available = models.BooleanField(default=True, help_text="Untick when the system's authorisation registry is down.")
    # Who validates an explanation when the changer's manager and their managers cannot (they
    # made the change, benefit from it, are absent, have no login): casework.access.guards.
    fallback_approver = models.ForeignKey(
        "Employee", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Validates changes on this system when the changer's manager and their managers cannot "
                  "(absent, the changer or the beneficiary, no login). Needs a Casework login.",
    )

    class Meta:
        ordering = ["code"]

    def __str__(self) -> str:
        return self.code


class Role(models.Model):
    role_id = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=100)
    department = models.CharField(max_length=80, blank=True)
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["role_id"]

    def __str__(self) -> str:
        return f"{self.role_id} {self.name}"


class RoleAuthorisation(models.Model):
    role = models.ForeignKey(Role, on_delete=models.CASCADE, related_name="authorisations")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="role_authorisations")
    access_level = models.ForeignKey(AccessLevel, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["role__role_id", "system__code"]
        constraints = [models.UniqueConstraint(fields=["role", "system"], name="access_role_system_unique")]

    def __str__(self) -> str:
        return f"{self.role.role_id}: {self.system.code} {self.access_level.name}"


class Employee(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        TERMINATED = "terminated", "Terminated"

    employee_id = models.CharField(max_length=20, unique=True)
    name = models.CharField(max_length=120)
    email = models.EmailField(blank=True)
    department = models.CharField(max_length=80, blank=True)
    job_title = models.CharField(max_length=100, blank=True)
    role = models.ForeignKey(Role, null=True, blank=True, on_delete=models.SET_NULL, related_name="employees")
    manager = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reports")
    # Managers log in to answer validation requests; everyone else answers through a link.
    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="access_employee")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    hire_date = models.DateField(null=True, blank=True)
    termination_date = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["employee_id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.employee_id})"

    def clean(self):
        if self.pk and self.manager_id == self.pk:
            raise ValidationError({"manager": "An employee cannot be their own manager."})

    def employed_on(self, day) -> bool:
        if self.hire_date and day < self.hire_date:
            return False
        return not (self.termination_date and day > self.termination_date)


class DirectAuthorisation(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        REVOKED = "revoked", "Revoked"

    authorisation_id = models.CharField(max_length=20, unique=True)
    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="authorisations")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="authorisations")
    access_level = models.ForeignKey(AccessLevel, on_delete=models.PROTECT, related_name="+")
    granted_by = models.CharField(max_length=120, blank=True)
    valid_from = models.DateField()
    valid_to = models.DateField(null=True, blank=True, help_text="Last day it is valid; empty means no end.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)

    class Meta:
        ordering = ["authorisation_id"]
        constraints = [
            models.CheckConstraint(condition=Q(valid_to__isnull=True) | Q(valid_to__gte=F("valid_from")),
                                   name="access_authorisation_dates_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.authorisation_id}: {self.employee.employee_id} {self.system.code} {self.access_level.name}"


class AbsenceQuerySet(models.QuerySet):
    """An absence's dates are encrypted at rest (health data: when a colleague was ill), so the
    database cannot compare them: rows are read by employee (a handful each) and their dates
    compared in Python, here and nowhere else."""

    def of(self, employee) -> list[Absence]:
        """The employee's absences, earliest first."""
        return sorted(self.filter(employee=employee), key=lambda a: (a.start_date, a.end_date, a.pk))

    def covering(self, employee, day, *, status: str | None = None) -> list[Absence]:
        """The employee's absences that include `day` (with `status`, only those in it)."""
        return [a for a in self.of(employee) if a.covers(day) and (status is None or a.status == status)]

    def period(self, employee, start, end) -> Absence | None:
        """The employee's absence with exactly these dates (one per period: Absence.clean)."""
        return next((a for a in self.of(employee) if (a.start_date, a.end_date) == (start, end)), None)


class Absence(models.Model):
    class Status(models.TextChoices):
        APPROVED = "approved", "Approved"
        PENDING = "pending", "Pending"
        REJECTED = "rejected", "Rejected"

    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="+")
    # Encrypted at rest (issue 42): that and when a colleague was ill or away is special-category.
    start_date = EncryptedDateField()
    end_date = EncryptedDateField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.APPROVED)

    objects = AbsenceQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["employee", "pk"]

    def covers(self, day) -> bool:
        return self.start_date <= day <= self.end_date

    def clean(self):
        """What the database checked before the dates were encrypted: an ordered period, one
        record per employee and period."""
        super().clean()
        if self.start_date and self.end_date:
            if self.end_date < self.start_date:
                raise ValidationError({"end_date": "The last day cannot be before the first."})
            if self.employee_id:
                same = type(self).objects.period(self.employee, self.start_date, self.end_date)
                if same is not None and same.pk != self.pk:
                    raise ValidationError({"start_date": "This employee already has a record for this period."})

    def save(self, *args, **kwargs):
        if self.start_date and self.end_date and self.end_date < self.start_date:
            raise ValidationError({"end_date": "The last day cannot be before the first."})
        super().save(*args, **kwargs)


class SickLeave(Absence):
    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="sick_leaves")

    class Meta(Absence.Meta):
        pass

    def __str__(self) -> str:
        return f"Sick leave {self.employee.employee_id} #{self.pk}"


class Vacation(Absence):
    employee = models.ForeignKey(Employee, on_delete=models.CASCADE, related_name="vacations")

    class Meta(Absence.Meta):
        pass

    def __str__(self) -> str:
        return f"Vacation {self.employee.employee_id} #{self.pk}"
