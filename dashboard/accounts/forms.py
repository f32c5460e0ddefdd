"""The accounts pages' forms: a person's own settings, an invite, a person's daily limits."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from accounts.models import Account
from accounts.services import INVITE_DAYS
from inference import selectors


class AccountForm(forms.Form):
    display_name = forms.CharField(
        label=_("Display name"),
        max_length=Account.DISPLAY_NAME_CHARS,
        required=False,
        help_text=_("Shown at the top of every page instead of your username."),
    )
    language = forms.ChoiceField(
        label=_("Language"),
        required=False,
        help_text=_("Your browser's language is used when none is chosen."),
    )
    default_preset = forms.ChoiceField(
        label=_("Default chat preset"), required=False, help_text=_("New chats start with these settings.")
    )
    auto_read = forms.BooleanField(
        label=_("Read answers aloud"),
        required=False,
        help_text=_("Each answer is read aloud as it is written. The speaker button on an answer reads it either way."),
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["language"].choices = [("", _("The browser's language")), *settings.LANGUAGES]
        presets = [(str(p["id"]), p["name"]) for p in selectors.preset_list(user=user)]
        self.fields["default_preset"].choices = [("", _("Default settings")), *presets]


class InviteForm(forms.Form):
    note = forms.CharField(
        label=_("Who is it for?"),
        max_length=100,
        required=False,
        help_text=_("Only staff see this, to tell invites apart."),
    )
    days = forms.TypedChoiceField(
        label=_("Valid for"),
        coerce=int,
        initial=7,
        choices=[(1, _("1 day")), (3, _("3 days")), (7, _("7 days")), (30, _("30 days"))],
    )
    is_staff = forms.BooleanField(
        label=_("Staff"),
        required=False,
        help_text=_("Staff invite people, set limits and choose the model."),
    )

    def clean_days(self):
        if self.cleaned_data["days"] not in INVITE_DAYS:
            raise forms.ValidationError(_("Pick how long the link stays valid."))
        return self.cleaned_data["days"]


class LimitsForm(forms.Form):
    answers_per_day = forms.IntegerField(label=_("Answers a day"), min_value=0, required=False)
    tokens_per_day = forms.IntegerField(label=_("Tokens a day"), min_value=0, required=False)
