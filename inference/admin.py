from django.contrib import admin

from inference.models import Conversation, EngineConfig, Generation, Message, Preset


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "user", "updated_at")
    list_filter = ("user",)
    raw_id_fields = ("current_leaf",)


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "status", "model_name", "ttft_ms", "output_tps", "prompt_tps", "created_at")
    list_filter = ("status", "model_name", "client")
    readonly_fields = [f.name for f in Generation._meta.fields]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "conversation", "role", "parent", "created_at")
    raw_id_fields = ("conversation", "parent")


@admin.register(Preset)
class PresetAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "temperature", "top_p", "max_tokens", "created_at")
    list_filter = ("user",)


admin.site.register(EngineConfig)
