from __future__ import annotations

from django.urls import path

from casework.cases.attachments import views

app_name = "case_attachments"

urlpatterns = [
    path("<str:reference>/attachments/", views.panel, name="panel"),
    path("<str:reference>/attachments/upload/", views.upload, name="upload"),
    path("<str:reference>/attachments/<int:pk>/download/", views.download, name="download"),
]
