"""Dashboard pages (live latency dashboard, request detail, export)."""

from __future__ import annotations

from django.urls import path

from dashboard import dashboard_views

urlpatterns = [
    path("", dashboard_views.dashboard, name="dashboard"),
    path("data.json", dashboard_views.dashboard_data, name="dashboard_data"),
    path("requests/<int:generation_id>/", dashboard_views.request_detail, name="dashboard_request"),
    path("export.csv", dashboard_views.export_csv, name="dashboard_export_csv"),
    path("export.json", dashboard_views.export_json, name="dashboard_export_json"),
]
