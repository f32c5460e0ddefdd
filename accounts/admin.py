from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from accounts.models import Account, ApiKey, Invite
from accounts.services import may_manage

# Fields only a superuser may change: with them, staff could make themselves the superuser.
ROLE_FIELDS = ("is_staff", "is_superuser", "groups", "user_permissions")


class HouseholdUserAdmin(UserAdmin):
    """Django's user pages with the people page's rule (accounts.services.may_manage): staff
    given the user permissions still cannot change, reset, deactivate or delete a staff account
    or the superuser, nor change anyone's role."""

    def has_change_permission(self, request, obj=None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or may_manage(actor=request.user, person=obj))

    def has_delete_permission(self, request, obj=None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or may_manage(actor=request.user, person=obj))

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else fields + ROLE_FIELDS

    def get_actions(self, request):
        # The bulk delete checks the permission, not each row: a superuser's only.
        actions = super().get_actions(request)
        if not request.user.is_superuser:
            actions.pop("delete_selected", None)
        return actions


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), HouseholdUserAdmin)


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
