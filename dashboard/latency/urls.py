"""/dashboard/: the live latency dashboard, request detail, exports; /engine/: staff's controls."""

from __future__ import annotations

from django.urls import path

from dashboard.latency import views

urlpatterns = [
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/data.json", views.dashboard_data, name="dashboard_data"),
    path("dashboard/requests/<int:generation_id>/", views.request_detail, name="dashboard_request"),
    path("dashboard/export.csv", views.export_csv, name="dashboard_export_csv"),
    path("dashboard/export.json", views.export_json, name="dashboard_export_json"),
    path("engine/policy/", views.engine_policy, name="engine_policy"),
    path("engine/demo/", views.engine_demo, name="engine_demo"),
]
