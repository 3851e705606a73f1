from __future__ import annotations

from django.urls import path

from casework.entities import views

app_name = "entities"

urlpatterns = [
    path("entities/<int:pk>/", views.entity_detail, name="detail"),
    path("entities/<int:pk>/graph/", views.entity_graph, name="graph"),
    path("entities/<int:pk>/graph.json", views.entity_graph_json, name="graph_json"),
    path("cases/<str:reference>/graph/", views.case_graph, name="case_graph"),
    path("cases/<str:reference>/graph.json", views.case_graph_json, name="case_graph_json"),
    path("cases/<str:reference>/links/", views.case_link_add, name="link"),
    path("cases/<str:reference>/merge/", views.case_merge, name="merge"),
]
