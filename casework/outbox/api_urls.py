from __future__ import annotations

from django.urls import path

from casework.outbox import api

urlpatterns = [
    path("webhooks/endpoints/", api.EndpointListApi.as_view(), name="api-webhook-endpoint-list"),
    path("webhooks/endpoints/<int:pk>/", api.EndpointDetailApi.as_view(), name="api-webhook-endpoint-detail"),
    path("webhooks/endpoints/<int:pk>/rotate-secret/", api.EndpointRotateApi.as_view(),
         name="api-webhook-endpoint-rotate"),
    path("webhooks/endpoints/<int:pk>/deliveries/", api.EndpointDeliveriesApi.as_view(),
         name="api-webhook-endpoint-deliveries"),
    path("webhooks/endpoints/<int:pk>/replay-failed/", api.EndpointReplayFailedApi.as_view(),
         name="api-webhook-endpoint-replay-failed"),
    path("webhooks/deliveries/<int:pk>/replay/", api.DeliveryReplayApi.as_view(), name="api-webhook-delivery-replay"),
]
