"""Attack 3: a session token has one spelling, and a logged-out token stays logged out however it is
spelled."""
import requests

from security.util import ADMIN_KEY, ADMIN_SECRET


def login(server):
    r = requests.post(server.url + "/api/v1/auth/login", timeout=30,
                      json={"access_key_id": ADMIN_KEY, "secret_access_key": ADMIN_SECRET})
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    assert f"internal_auth_session={token}" in r.headers.get("Set-Cookie", ""), r.headers
    return token


def user_with_bearer(server, token):
    return requests.get(server.url + "/api/v1/user", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def user_with_cookie(server, token):
    return requests.get(server.url + "/api/v1/user", headers={"Cookie": f"internal_auth_session={token}"},
                        timeout=30)


def spellings(token):
    """The same token written differently: hex in upper or mixed case, in either part."""
    payload, _, mac = token.partition(".")
    alternate = "".join(c.upper() if i % 2 else c for i, c in enumerate(payload))
    return {
        "payload upper-cased": payload.upper() + "." + mac,
        "payload mixed case": alternate + "." + mac,
        "mac upper-cased": payload + "." + mac.upper(),
        "all upper-cased": token.upper(),
        "payload with a leading zero byte": "00" + payload + "." + mac,
        "trailing space": token + " ",
    }


def test_a_token_has_one_spelling(catalog_server):
    server = catalog_server()
    token = login(server)
    assert token.partition(".")[0] != token.partition(".")[0].upper(), "the payload holds hex letters"
    assert user_with_bearer(server, token).status_code == 200
    assert user_with_cookie(server, token).status_code == 200
    for name, other in spellings(token).items():
        if other.strip() == token:
            continue  # a header value's trailing space is not part of it
        assert user_with_bearer(server, other).status_code == 401, name
        assert user_with_cookie(server, other).status_code == 401, name
    assert user_with_bearer(server, token).status_code == 200


def test_logging_out_ends_the_token_in_every_spelling(catalog_server):
    server = catalog_server()
    token = login(server)
    other = login(server)  # a second session of the same key stays valid
    r = requests.post(server.url + "/api/v1/auth/logout", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code in (200, 204), r.text
    assert user_with_bearer(server, token).status_code == 401
    assert user_with_cookie(server, token).status_code == 401
    for name, spelled in spellings(token).items():
        assert user_with_bearer(server, spelled).status_code == 401, name
        assert user_with_cookie(server, spelled).status_code == 401, name
    assert user_with_bearer(server, other).status_code == 200


def test_logging_out_with_another_spelling_ends_the_session(catalog_server):
    """A logout given another spelling of a token leaves no other spelling usable."""
    server = catalog_server()
    token = login(server)
    upper = spellings(token)["payload upper-cased"]
    requests.post(server.url + "/api/v1/auth/logout", headers={"Authorization": f"Bearer {upper}"}, timeout=30)
    # Either logout refused the other spelling (the token was never ended and still works as written),
    # or it ended the session: never a token that works in another spelling.
    assert user_with_bearer(server, upper).status_code == 401
    for name, spelled in spellings(token).items():
        if spelled.strip() != token:
            assert user_with_bearer(server, spelled).status_code == 401, name
