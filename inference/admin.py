from django.contrib import admin

from inference.models import ApiKey, Conversation, EngineConfig, Generation, Message


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "user", "updated_at")
    list_filter = ("user",)


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "status", "model_name", "ttft_ms", "output_tps", "prompt_tps", "created_at")
    list_filter = ("status", "model_name", "client")
    readonly_fields = [f.name for f in Generation._meta.fields]


admin.site.register(Message)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")


admin.site.register(EngineConfig)
