"""Every HTTP route: each feature's own urls, the APIs, and the few the project itself serves."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from dashboard.accounts import views as account_views
from dashboard.chat import views as chat_views
from homeai import health
from inference.api import views as api_views

urlpatterns = [
    path("", chat_views.home, name="home"),
    path("setup/", account_views.setup, name="setup"),
    path("chat/", include("dashboard.chat.urls")),
    path("", include("dashboard.latency.urls")),
    path("models/", include("dashboard.library.urls")),
    path("", include("dashboard.accounts.urls")),
    path("v1/", include("inference.api.urls")),
    path("api/", include("inference.api.ollama_urls")),
    path("metrics", api_views.metrics, name="metrics"),
    path("healthz", health.healthz, name="healthz"),
    path("health", health.health, name="health"),
    path("props", api_views.props, name="props"),
    path("slots", api_views.slots, name="slots"),
    path("healthz/web", health.healthz_web, name="healthz-web"),
    path("accounts/login/", account_views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("i18n/catalog.js", JavaScriptCatalog.as_view(), name="javascript_catalog"),
]
