"""/models/: the model library (staff)."""

from __future__ import annotations

from django.urls import path

from dashboard.library import views

urlpatterns = [
    path("", views.model_library, name="model_library"),
    path("pulls/", views.pull_list, name="model_pulls"),
    path("pulls/start", views.pull_start, name="model_pull_start"),
    path("pulls/cancel", views.pull_cancel, name="model_pull_cancel"),
    path("pulls/forecast", views.pull_forecast, name="model_pull_forecast"),
]
