from __future__ import annotations

from django.urls import path

from casework.cases.saved_views import views

app_name = "saved_views"

urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.create, name="create"),
    path("<int:pk>/", views.open_view, name="open"),
    path("<int:pk>/edit/", views.update, name="update"),
    path("<int:pk>/delete/", views.delete, name="delete"),
]
