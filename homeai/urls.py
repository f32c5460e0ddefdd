from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import views
from inference.api import views as api_views

urlpatterns = [
    path("", views.home, name="home"),
    path("setup/", views.setup, name="setup"),
    path("chat/", views.chat, name="chat"),
    path("chat/<int:conversation_id>/", views.chat, name="chat_conversation"),
    path("chat/<int:conversation_id>/delete/", views.conversation_delete, name="conversation_delete"),
    path("healthz", views.healthz, name="healthz"),
    path("engine/policy/", views.engine_policy, name="engine_policy"),
    path("engine/demo/", views.engine_demo, name="engine_demo"),
    path("models/", views.model_library, name="model_library"),
    path("dashboard/", include("dashboard.urls")),
    path("v1/", include("inference.api.urls")),
    path("metrics", api_views.metrics, name="metrics"),
    path("settings/api-keys/", include("inference.api.keys_urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
