"""Attacks through lakeFS's GC rules (settings/gc_rules): rules decide how long deleted data stays
recoverable, so setting them needs retention:SetGarbageCollectionRules and reading them
retention:GetGarbageCollectionRules; a malformed rule set is refused whole and changes nothing."""
from security.conftest import make_victim


def rules(api, repo="lake"):
    return api("GET", f"/repositories/{repo}/settings/gc_rules")


def test_gc_rules_need_their_permissions(catalog_server):
    v = make_victim(catalog_server())
    api, bob = v.api, v.bob_api
    good = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 30}]}
    assert rules(api).status_code == 404
    for method, path, body in [("PUT", "/settings/gc_rules", good), ("POST", "/gc/rules", good),
                               ("DELETE", "/settings/gc_rules", None), ("GET", "/settings/gc_rules", None),
                               ("GET", "/gc/rules/set_allowed", None)]:
        r = bob(method, "/repositories/lake" + path, json=body)
        assert r.status_code == 401 and "insufficient permissions" in r.json()["message"], (method, path, r.text)
        r = api(method, "/repositories/lake" + path, json=body, auth=None)
        assert r.status_code == 401, (method, path, r.text)
    assert rules(api).status_code == 404
    assert api("GET", "/repositories/lake/gc/rules/set_allowed").status_code == 204
    assert api("PUT", "/repositories/lake/settings/gc_rules", json=good).status_code == 204
    assert rules(api).json() == good
    assert api("GET", "/repositories/nowhere/settings/gc_rules").status_code == 404


def test_malformed_gc_rules_change_nothing(catalog_server):
    v = make_victim(catalog_server())
    api = v.api
    good = {"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 30}]}
    assert api("PUT", "/repositories/lake/settings/gc_rules", json=good).status_code == 204
    for body, says in [
        ({"branches": []}, "default_retention_days"),
        ({"default_retention_days": -1, "branches": []}, "must be 0 to"),
        ({"default_retention_days": "7", "branches": []}, "wrong type"),
        ({"default_retention_days": 7, "branches": {"main": 1}}, "branches"),
        ({"default_retention_days": 7, "branches": [{"branch_id": "a/b", "retention_days": 1}]}, "a/b"),
        ({"default_retention_days": 7, "branches": [{"branch_id": "main", "retention_days": 1},
                                                    {"branch_id": "main", "retention_days": 2}]}, "two GC rules"),
        ({"default_retention_days": 7, "branches": [{"branch_id": "main"}]}, "retention_days"),
        ({"default_retention_days": 10 ** 30, "branches": []}, ""),
    ]:
        r = api("PUT", "/repositories/lake/settings/gc_rules", json=body)
        assert r.status_code == 400 and says in r.json()["message"], (body, r.text)
        assert rules(api).json() == good
    r = api("PUT", "/repositories/lake/settings/gc_rules", data=b"{", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert rules(api).json() == good
