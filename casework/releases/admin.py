"""Admin: releases and their reports are read here; CI posts them and the detective files them."""

from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from casework.releases.models import Release, ReleaseTest, RiskReport


class ReadOnly:
    """CI posts releases and the detective files reports (through casework.releases.services);
    the admin reads them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ReleaseTestInline(ReadOnly, admin.TabularInline):
    model = ReleaseTest
    extra = 0


@admin.register(Release)
class ReleaseAdmin(CaseScopedAdmin, ReadOnly, admin.ModelAdmin):
    list_display = ["release_id", "version", "tests_failed", "error_rate", "response_time_p95", "assessment",
                    "created_at"]
    list_filter = ["assessment"]
    search_fields = ["release_id", "version", "case__reference"]
    inlines = [ReleaseTestInline]


@admin.register(RiskReport)
class RiskReportAdmin(CaseScopedAdmin, ReadOnly, admin.ModelAdmin):
    list_display = ["report_id", "release", "severity", "adjusted_from", "provider", "filed_at"]
    list_filter = ["severity"]
    search_fields = ["report_id", "release__release_id"]
