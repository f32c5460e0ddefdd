"""Roles: staff manage the household's accounts, but only a superuser resets, deactivates or
changes a staff account or the superuser, on the people page and in the admin alike."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from accounts.models import Account
from tests import factories


@pytest.fixture
def household(db):
    """The superuser, a staff member given every user permission the admin knows (the most a
    superuser could have granted them), another staff member and a child."""
    root = factories.user("root", is_staff=True, is_superuser=True)
    staff = factories.user("helper", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="auth"))
    other = factories.user("other-staff", is_staff=True)
    kid = factories.user("kid")
    return {"root": root, "staff": staff, "other": other, "kid": kid}


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def reload(user):
    return get_user_model().objects.get(pk=user.pk)


@pytest.mark.parametrize("target", ["root", "other"])
def test_staff_cannot_get_a_reset_link_for_the_superuser_or_other_staff(household, target):
    person = household[target]
    page = signed_in(household["staff"]).post(f"/people/{person.id}/reset/")
    assert page.status_code == 403
    assert b'id="reset-link"' not in page.content and b"/accounts/reset/" not in page.content
    assert b"Only a superuser can" in page.content


@pytest.mark.parametrize("target", ["root", "other"])
def test_staff_cannot_deactivate_the_superuser_or_other_staff(household, target):
    person = household[target]
    theirs = signed_in(person)
    answer = signed_in(household["staff"]).post(f"/people/{person.id}/active/", {"active": "0"})
    assert answer.status_code == 403
    assert reload(person).is_active
    assert theirs.get("/chat/").status_code == 200  # still signed in


@pytest.mark.parametrize(("actor", "target"), [("staff", "kid"), ("root", "other")])
def test_staff_manage_people_who_are_not_staff_and_a_superuser_manages_staff(household, actor, target):
    client = signed_in(household[actor])
    person = household[target]
    assert b'id="reset-link"' in client.post(f"/people/{person.id}/reset/").content
    client.post(f"/people/{person.id}/active/", {"active": "0"})
    assert not reload(person).is_active


def test_the_people_page_offers_staff_no_button_for_staff_accounts(household):
    page = signed_in(household["staff"]).get("/people/").content.decode()
    for name, person in household.items():
        offered = f"/people/{person.id}/reset/" in page
        assert offered == (name in ("staff", "kid")), name


@pytest.mark.parametrize("target", ["root", "other"])
def test_in_the_admin_staff_cannot_set_the_password_of_the_superuser_or_other_staff(household, target):
    person = household[target]
    client = signed_in(household["staff"])
    new = "taken over 12345"
    answer = client.post(
        f"/admin/auth/user/{person.id}/password/", {"password1": new, "password2": new, "usable_password": "true"}
    )
    assert answer.status_code == 403
    assert not Client().login(username=person.username, password=new)


@pytest.mark.parametrize("target", ["root", "other"])
def test_in_the_admin_staff_cannot_deactivate_demote_or_delete_the_superuser_or_other_staff(household, target):
    person = household[target]
    client = signed_in(household["staff"])
    change = client.post(f"/admin/auth/user/{person.id}/change/", admin_form(person, is_active=False, is_staff=False))
    assert change.status_code == 403
    assert client.post(f"/admin/auth/user/{person.id}/delete/", {"post": "yes"}).status_code == 403
    client.post("/admin/auth/user/", {"action": "delete_selected", "_selected_action": [person.id], "post": "yes"})
    person = reload(person)
    assert person.is_active and person.is_staff


def test_in_the_admin_staff_cannot_make_themselves_superuser(household):
    staff = household["staff"]
    answer = signed_in(staff).post(f"/admin/auth/user/{staff.id}/change/", admin_form(staff, is_superuser=True))
    assert answer.status_code == 302  # saved, without the role fields
    assert not reload(staff).is_superuser


def test_in_the_admin_a_superuser_demotes_staff(household):
    other = household["other"]
    root = signed_in(household["root"])
    answer = root.post(f"/admin/auth/user/{other.id}/change/", admin_form(other, is_staff=False))
    assert answer.status_code == 302
    assert not reload(other).is_staff


def admin_form(user, **flags) -> dict:
    """The admin's change form for user as a browser posts it, with flags (is_active, is_staff,
    is_superuser) set as given or as they are."""
    form = {
        "username": user.username,
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
    }
    for flag in ("is_active", "is_staff", "is_superuser"):
        if flags.get(flag, getattr(user, flag)):
            form[flag] = "on"
    return form


@pytest.mark.parametrize("target", ["root", "other"])
def test_staff_cannot_set_the_daily_limits_of_the_superuser_or_other_staff(household, target):
    person = household[target]
    answer = signed_in(household["staff"]).post(
        f"/people/{person.id}/limits/", {f"u{person.id}-answers_per_day": "0", f"u{person.id}-tokens_per_day": "1"}
    )
    assert answer.status_code == 403
    assert b"Only a superuser can" in answer.content
    account = Account.of(person)
    assert (account.answers_per_day, account.tokens_per_day) == (None, None)
    assert f"/people/{person.id}/limits/" not in signed_in(household["staff"]).get("/people/").content.decode()


@pytest.mark.parametrize(("actor", "target"), [("staff", "kid"), ("root", "other")])
def test_staff_set_limits_of_people_who_are_not_staff_and_a_superuser_of_staff(household, actor, target):
    person = household[target]
    signed_in(household[actor]).post(
        f"/people/{person.id}/limits/", {f"u{person.id}-answers_per_day": "3", f"u{person.id}-tokens_per_day": ""}
    )
    account = Account.of(person)
    assert (account.answers_per_day, account.tokens_per_day) == (3, None)
