"""Attacks on groups (lakeFS's RBAC "internal" mode): a member of a group must not raise its own rights
through the group API (join Admins, attach a policy to its group, rewrite its group's ACL or a base
policy), leaving a group takes the rights away at once, and malformed group requests are refused with a
message while nothing changes."""
import requests

from security.util import ADMIN, create_repo, upload


def member_of(api, user, group):
    assert api("POST", "/auth/users", json={"id": user}).status_code == 201
    assert api("PUT", f"/auth/groups/{group}/members/{user}").status_code == 201
    r = api("POST", f"/auth/users/{user}/credentials")
    assert r.status_code == 201, r.text
    return api.as_user((r.json()["access_key_id"], r.json()["secret_access_key"]))


def snapshot(api):
    """What the attacks must leave as it was: groups, their members and policies, the base policies."""
    out = {}
    for g in api("GET", "/auth/groups", params={"amount": 1000}).json()["results"]:
        gid = g["id"]
        out[gid] = (sorted(u["id"] for u in api("GET", f"/auth/groups/{gid}/members").json()["results"]),
                    sorted(p["id"] for p in api("GET", f"/auth/groups/{gid}/policies").json()["results"]))
    out["policies"] = sorted((p["id"], str(p["statement"])) for p in
                             api("GET", "/auth/policies", params={"amount": 1000}).json()["results"])
    return out


def test_a_developer_cannot_raise_its_own_rights(catalog_server):
    server = catalog_server()
    api = server.api
    dev = member_of(api, "dev", "Developers")
    before = snapshot(api)
    attempts = [
        ("PUT", "/auth/groups/Admins/members/dev", None),
        ("PUT", "/auth/groups/Developers/policies/AuthFullAccess", None),
        ("POST", "/auth/groups/Developers/acl", {"permission": "Admin"}),
        ("PUT", "/auth/policies/FSReadWriteAll", {"id": "FSReadWriteAll", "statement": [
            {"effect": "allow", "action": ["*"], "resource": "*"}]}),
        ("POST", "/auth/groups", {"id": "Mine"}),
        ("DELETE", "/auth/groups/Viewers", None),
        ("DELETE", "/auth/groups/Developers/policies/FSReadWriteAll", None),
        ("PUT", "/auth/users/dev/policies/FSFullAccess", None),
        ("GET", "/auth/groups/Admins/acl", None),
    ]
    for method, path, body in attempts:
        r = dev(method, path, json=body)
        assert r.status_code == 401 and r.json()["message"].startswith("insufficient permissions"), \
            (method, path, r.status_code, r.text)
    assert snapshot(api) == before, "a refused request changed groups or policies"
    assert dev("GET", "/auth/users").status_code == 401
    # What the group does grant: its own keys, and writing objects.
    assert dev("POST", "/auth/users/dev/credentials").status_code == 201
    assert dev("POST", "/auth/users/admin/credentials").status_code == 401


def test_leaving_a_group_takes_its_rights_at_once(catalog_server):
    server = catalog_server()
    api = server.api
    create_repo(api, "lake", server.namespace("lake"))
    assert upload(api, "lake", "main", "a", b"1").status_code == 201
    dev = member_of(api, "dev", "Developers")
    assert upload(dev, "lake", "main", "b", b"2").status_code == 201
    assert api("DELETE", "/auth/groups/Developers/members/dev").status_code == 204
    assert upload(dev, "lake", "main", "c", b"3").status_code == 401
    assert dev("GET", "/repositories/lake/refs/main/objects", params={"path": "a"}).status_code == 401
    # A group deleted with its member in it grants nothing to a new group of that name.
    assert api("POST", "/auth/groups", json={"id": "Temp"}).status_code == 201
    assert api("PUT", "/auth/groups/Temp/policies/FSFullAccess").status_code == 201
    assert api("PUT", "/auth/groups/Temp/members/dev").status_code == 201
    assert upload(dev, "lake", "main", "d", b"4").status_code == 201
    assert api("DELETE", "/auth/groups/Temp").status_code == 204
    assert api("POST", "/auth/groups", json={"id": "Temp"}).status_code == 201
    assert upload(dev, "lake", "main", "e", b"5").status_code == 401


def test_malformed_group_requests_are_refused_and_change_nothing(catalog_server):
    server = catalog_server()
    api = server.api
    before = snapshot(api)
    cases = [
        ("POST", "/auth/groups", {"id": "has space"}, 400, "invalid group id"),
        ("POST", "/auth/groups", {"id": ""}, 400, "invalid group id"),
        ("POST", "/auth/groups", {"description": "no id"}, 400, "id"),
        ("POST", "/auth/groups", {"id": "Admins"}, 409, "already exists"),
        ("POST", "/auth/groups", {"id": "x", "description": "d" * 5000}, 400, "description"),
        ("POST", "/auth/groups/Viewers/acl", {"permission": "Owner"}, 400, "must be Read, Write, Super or Admin"),
        ("POST", "/auth/groups/Viewers/acl", {}, 400, "permission"),
        ("PUT", "/auth/groups/Viewers/members/nobody", None, 404, "user \"nobody\" not found"),
        ("PUT", "/auth/groups/Nope/members/admin", None, 404, "group \"Nope\" not found"),
        ("PUT", "/auth/groups/Viewers/policies/Nope", None, 404, "policy \"Nope\" not found"),
        ("PUT", "/auth/groups/Admins/members/admin", None, 409, "already in group"),
        ("PUT", "/auth/policies/FSReadAll", {"id": "Other", "statement": [
            {"effect": "allow", "action": ["fs:*"], "resource": "*"}]}, 400, "cannot change"),
        ("PUT", "/auth/policies/FSReadAll", {"id": "FSReadAll", "statement": [
            {"effect": "allow", "action": ["fsx:ReadObject"], "resource": "*"}]}, 400, "must be \"*\" or"),
        ("PUT", "/auth/policies/Nope", {"id": "Nope", "statement": [
            {"effect": "allow", "action": ["fs:*"], "resource": "*"}]}, 404, "not found"),
    ]
    for method, path, body, status, words in cases:
        r = api(method, path, json=body)
        assert r.status_code == status and words in r.json()["message"], (method, path, body, r.status_code, r.text)
    r = requests.post(server.url + "/api/v1/auth/groups", data="{not json", auth=ADMIN, timeout=10,
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["message"]
    assert snapshot(api) == before
