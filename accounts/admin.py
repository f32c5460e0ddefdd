from django.contrib import admin

from accounts.models import Account, ApiKey, Invite


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("user", "display_name", "language", "answers_per_day", "tokens_per_day")


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ("id", "note", "is_staff", "created_by", "created_at", "expires_at", "used_at", "used_by")


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")
