"""Every HTTP route: each feature's own urls, the APIs, and the few the project itself serves."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from api import server
from dashboard.accounts import views as account_views
from dashboard.chat import views as chat_views

urlpatterns = [
    path("", chat_views.home, name="home"),
    path("setup/", account_views.setup, name="setup"),
    path("chat/", include("dashboard.chat.urls")),
    path("", include("dashboard.latency.urls")),
    path("models/", include("dashboard.library.urls")),
    path("", include("dashboard.offline.urls")),
    path("documents/", include("dashboard.documents.urls")),
    path("tools/", include("dashboard.tools.urls")),
    path("", include("dashboard.accounts.urls")),
    path("v1/", include("api.openai.urls")),
    path("api/", include("api.ollama.urls")),
    path("metrics", server.metrics, name="metrics"),
    path("healthz", server.healthz, name="healthz"),
    path("health", server.health, name="health"),
    path("props", server.props, name="props"),
    path("slots", server.slots, name="slots"),
    path("healthz/web", server.healthz_web, name="healthz-web"),
    path("accounts/login/", account_views.sign_in, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The admin's own sign-in, behind the same throttle (its URL name stays the admin's).
    path("admin/login/", account_views.guarded(admin.site.login)),
    path("admin/", admin.site.urls),
    path("i18n/catalog.js", JavaScriptCatalog.as_view(), name="javascript_catalog"),
]
