"""The documents page's form: a new collection."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from documents.models import Collection


class CollectionForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    visibility = forms.ChoiceField(
        label=_("Who reads it"),
        choices=[
            (Collection.Visibility.PRIVATE, _("Only me")),
            (Collection.Visibility.PEOPLE, _("Me and the people named below")),
            (Collection.Visibility.HOUSEHOLD, _("The whole household (staff only)")),
        ],
    )
    readers = forms.CharField(
        label=_("People"),
        required=False,
        max_length=2000,
        help_text=_("Usernames, separated by commas, for a collection shared with named people."),
    )
    folder = forms.CharField(
        label=_("Folder"),
        required=False,
        max_length=1000,
        help_text=_("A folder inside the documents folder, written relative to it; empty for uploads only."),
    )

    def reader_names(self) -> list[str]:
        return [n.strip() for n in self.cleaned_data.get("readers", "").split(",") if n.strip()]
