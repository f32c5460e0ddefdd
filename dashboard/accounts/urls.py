"""Accounts: a person's own settings and API keys, staff's people page, invites and resets."""

from __future__ import annotations

from django.urls import path

from dashboard.accounts import api_keys, profile, users, views

urlpatterns = [
    path("settings/", profile.account_settings, name="account_settings"),
    path("settings/password/", profile.PasswordChange.as_view(), name="password_change"),
    path("settings/sign-out-everywhere/", profile.sign_out_everywhere, name="sign_out_everywhere"),
    path("settings/api-keys/", api_keys.api_keys, name="api_keys"),
    path("settings/api-keys/<int:key_id>/revoke/", api_keys.api_key_revoke, name="api_key_revoke"),
    path("people/", users.users, name="users"),
    path("people/invites/<int:invite_id>/revoke/", users.invite_revoke, name="invite_revoke"),
    path("people/<int:user_id>/active/", users.user_active, name="user_active"),
    path("people/<int:user_id>/limits/", users.user_limits, name="user_limits"),
    path("people/<int:user_id>/reset/", users.user_reset, name="user_reset"),
    path("invite/<str:token>/", views.invite_accept, name="invite_accept"),
    path("accounts/reset/<uidb64>/<token>/", profile.PasswordReset.as_view(), name="password_reset_confirm"),
]
