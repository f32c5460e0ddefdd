"""The installable app's two files, at the site's root: the manifest, and the service worker,
whose scope is the folder it is served from (so /sw.js covers every page)."""

from __future__ import annotations

from django.urls import path

from dashboard.offline import views

urlpatterns = [
    path("manifest.webmanifest", views.manifest, name="manifest"),
    path("sw.js", views.service_worker, name="service_worker"),
]
