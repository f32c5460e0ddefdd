"""/models/: the model library (staff)."""

from __future__ import annotations

from django.urls import path

from dashboard.library import views

urlpatterns = [
    path("", views.model_library, name="model_library"),
]
