"""The people of the house: their settings and daily limits (Account), the one-time links that
let someone join (Invite), and their API keys (ApiKey, only a hash kept)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiKey(models.Model):
    """A personal key for the OpenAI-compatible API; only its SHA-256 hash is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    # The key's first characters, so a person can tell their keys apart without the secret.
    prefix = models.CharField(max_length=16)
    # A key carries 256 random bits, so a fast hash is as safe as a slow password hash
    # here, and it can be looked up directly (unique index) on every request.
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Account(models.Model):
    """A person's own settings, and the daily limits staff set for them (made on first use)."""

    DISPLAY_NAME_CHARS = 60

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    display_name = models.CharField(max_length=DISPLAY_NAME_CHARS, blank=True)
    # A code from settings.LANGUAGES; empty: the browser's Accept-Language decides.
    language = models.CharField(max_length=8, blank=True)
    # A built-in preset's key or the id of one of the person's own presets; new chats start with it.
    default_preset = models.CharField(max_length=32, blank=True)
    # Answers read aloud as they are written (docs/speech.md); the speaker button works either way.
    auto_read = models.BooleanField(default=False)
    # Null: no limit. A day runs from local midnight (settings.TIME_ZONE).
    answers_per_day = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_day = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return self.display_name or str(self.user)

    @classmethod
    def of(cls, user) -> Account:
        return cls.objects.get_or_create(user=user)[0]


class Invite(models.Model):
    """A one-time link that lets one person create their account (the link carries the signed id)."""

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    note = models.CharField(max_length=100, blank=True)  # who it is for, as staff wrote it
    is_staff = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="invite"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.note or f"invite {self.id}"
