from __future__ import annotations

from django.urls import path

from casework.cases.tasks import views

app_name = "case_tasks"

urlpatterns = [
    path("<str:reference>/tasks/", views.panel, name="panel"),
    path("<str:reference>/tasks/add/", views.add, name="add"),
    path("<str:reference>/tasks/from-template/", views.from_template, name="from_template"),
    path("<str:reference>/tasks/<int:pk>/done/", views.done, name="done"),
    path("<str:reference>/tasks/<int:pk>/reopen/", views.reopen, name="reopen"),
    path("<str:reference>/tasks/<int:pk>/assign/", views.assign, name="assign"),
]
