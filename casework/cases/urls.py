from __future__ import annotations

from django.urls import path

from casework.cases import bulk_views, export, restriction_views, views

app_name = "cases"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("bulk/", bulk_views.bulk, name="bulk"),
    path("export.csv", export.export_csv, name="export_csv"),
    path("<str:reference>/", views.detail, name="detail"),
    path("<str:reference>/timeline/", views.timeline, name="timeline"),
    path("<str:reference>/assign-to-me/", views.assign_to_me, name="assign_to_me"),
    path("<str:reference>/comments/", views.comment_add, name="comment_add"),
    path("<str:reference>/close/", views.close, name="close"),
    path("<str:reference>/restriction/", restriction_views.restriction_change, name="restriction"),
]
