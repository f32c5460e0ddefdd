"""Password guessing through every sign-in page, from addresses a client makes up: stopped at the
account's limit, and a made-up X-Forwarded-For from anyone but the proxy is not believed."""

from __future__ import annotations

import httpx
from django.contrib.auth import get_user_model

from infra import throttle
from tests import factories
from tests.security.conftest import CSRF_FIELD, sign_in

PAGES = ("/admin/login/", "/accounts/login/")
# Behind the TLS proxy (this machine: HOMEAI_TRUSTED_PROXIES' default), over plain HTTP here.
BEHIND_PROXY = {"HOMEAI_BEHIND_TLS_PROXY": "1", "HOMEAI_SECURE_COOKIES": "0"}


def test_spraying_one_account_over_both_sign_in_pages_from_rotating_addresses_stops_at_its_limit(start_web):
    factories.user("root", is_staff=True, is_superuser=True)
    web = start_web(**BEHIND_PROXY)
    for guess in range(throttle.PER_ACCOUNT):
        page = PAGES[guess % 2]
        hop = {"X-Forwarded-For": f"203.0.113.{guess + 1}"}  # each try a "new" client, as the proxy says
        assert sign_in(web.url, page, "root", f"guess {guess}", hop) == 200, page  # the form again
    for page in PAGES:  # the right password, from yet another address: not even checked
        assert sign_in(web.url, page, "root", factories.PASSWORD, {"X-Forwarded-For": "198.51.100.7"}) == 429, page


# Spellings Django's sign-in forms read as "root" (NFKC): fullwidth, mathematical bold, upper case.
SPELLINGS = ("ｒoot", "𝐫oot", "ROOT", "ｒｏｏｔ", "𝐫𝐨𝐨𝐭", " root")


def test_spraying_one_account_under_unicode_spellings_of_its_name_stops_at_its_limit(start_web):
    factories.user("root", is_staff=True, is_superuser=True)
    web = start_web(**BEHIND_PROXY)
    for guess in range(throttle.PER_ACCOUNT):
        name, page = SPELLINGS[guess % len(SPELLINGS)], PAGES[guess % 2]
        hop = {"X-Forwarded-For": f"203.0.113.{guess + 1}"}
        assert sign_in(web.url, page, name, f"guess {guess}", hop) == 200, (page, name)
    for k, name in enumerate(SPELLINGS):  # the right password, any spelling, any page: not checked
        hop = {"X-Forwarded-For": f"198.51.100.{k + 1}"}
        assert sign_in(web.url, PAGES[k % 2], name, factories.PASSWORD, hop) == 429, name
    assert sign_in(web.url, PAGES[1], "root", factories.PASSWORD, {"X-Forwarded-For": "198.51.100.99"}) == 429


def test_an_other_person_still_signs_in_from_the_proxys_address_after_a_guest_used_up_its_tries(start_web):
    factories.user("guest-target")
    factories.user("dad")
    web = start_web(**BEHIND_PROXY)
    for guess in range(throttle.PER_CLIENT):  # one device behind the proxy, sent without its address
        sign_in(web.url, PAGES[1], f"name-{guess}", "guess")
    assert sign_in(web.url, PAGES[1], "dad", factories.PASSWORD) == 302  # the house is not locked out


def test_a_made_up_forwarded_for_from_a_client_that_is_not_the_proxy_is_ignored(start_web):
    factories.user("mum")
    web = start_web(**BEHIND_PROXY, HOMEAI_TRUSTED_PROXIES="192.0.2.1")  # the proxy is elsewhere
    for guess in range(throttle.PER_CLIENT):  # many names, each try claiming another address
        hop = {"X-Forwarded-For": f"192.168.1.{guess + 1}"}
        assert sign_in(web.url, PAGES[guess % 2], f"name-{guess}", "guess", hop) == 200
    # Counted against this client's real address: it is refused, whatever it claims next.
    assert sign_in(web.url, PAGES[1], "mum", factories.PASSWORD, {"X-Forwarded-For": "192.168.1.200"}) == 429


def test_guessing_api_keys_counts_with_passwords_and_stops_at_the_clients_limit(start_web):
    factories.user("mum")
    web = start_web()
    for guess in range(throttle.PER_CLIENT - 1):
        key = {"Authorization": f"Bearer hai_guess-{guess}"}
        assert httpx.get(web.url + "/v1/models", headers=key, timeout=60).status_code == 401
    assert sign_in(web.url, PAGES[1], "mum", "a guess") == 200  # the client's last try
    refused = httpx.get(web.url + "/v1/models", headers={"Authorization": "Bearer hai_one-more"}, timeout=60)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "too_many_failures"


def test_behind_the_proxy_https_answers_carry_hsts_and_secure_cookies_and_a_client_cannot_ask_for_them(start_web):
    factories.user("mum")
    web = start_web(HOMEAI_BEHIND_TLS_PROXY="1", HOMEAI_TRUSTED_PROXIES="127.0.0.1")
    page = httpx.get(web.url + PAGES[1], headers={"X-Forwarded-Proto": "https"}, timeout=60)
    assert page.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "secure" in page.headers["Set-Cookie"].lower()
    other = start_web(HOMEAI_BEHIND_TLS_PROXY="1", HOMEAI_TRUSTED_PROXIES="192.0.2.1")  # we are not the proxy
    page = httpx.get(other.url + PAGES[1], headers={"X-Forwarded-Proto": "https"}, timeout=60)
    assert "Strict-Transport-Security" not in page.headers


def change_password(client: httpx.Client, old: str, new: str) -> httpx.Response:
    """The password-change form, as a signed-in browser posts it."""
    token = CSRF_FIELD.search(client.get("/settings/password/").content).group(1).decode()
    data = {"old_password": old, "new_password1": new, "new_password2": new, "csrfmiddlewaretoken": token}
    return client.post("/settings/password/", data=data)


def test_guessing_the_old_password_on_the_password_change_form_stops_at_the_limit(start_web):
    factories.user("mum")
    web = start_web()
    new = "a new password 12345"
    with httpx.Client(base_url=web.url, timeout=60) as client:  # a session someone else got hold of
        token = CSRF_FIELD.search(client.get(PAGES[1]).content).group(1).decode()
        data = {"username": "mum", "password": factories.PASSWORD, "csrfmiddlewaretoken": token}
        assert client.post(PAGES[1], data=data).status_code == 302
        for guess in range(throttle.PER_CLIENT_ACCOUNT):
            assert change_password(client, f"guess {guess}", new).status_code == 200  # the form, "incorrect"
        refused = change_password(client, factories.PASSWORD, new)  # the right one: not checked
        assert refused.status_code == 429
        assert "Too many failed sign-ins" in refused.text
    assert get_user_model().objects.get(username="mum").check_password(factories.PASSWORD)  # unchanged
    assert sign_in(web.url, PAGES[1], "mum", factories.PASSWORD) == 429  # one count with sign-ins
