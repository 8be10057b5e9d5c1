"""Attack 1: linking an address the caller did not get issued. A link (PUT .../staging/backing) stages
data the client wrote itself; it must accept only an address that GET .../staging/backing issued for that
repository, branch and path, once, before it expires, and take the object's size from storage."""
from pathlib import Path

import pytest

from security.conftest import SECRET_X, make_victim
from security.util import eventually, stat

BACKING = "/repositories/lake/branches/{branch}/staging/backing"


def issue(api, path, branch="main"):
    r = api("GET", BACKING.format(branch=branch), params={"path": path})
    assert r.status_code == 200, r.text
    address = r.json()["physical_address"]
    assert address.startswith("local://"), address
    return address


def write_at(address, data):
    """Writes the object's bytes where the server said, as a client with direct access to storage does."""
    f = Path(address[len("local://"):])
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(data)


def link(api, path, address, size=None, checksum="0" * 32, branch="main"):
    body = {"staging": {"physical_address": address}, "checksum": checksum}
    if size is not None:
        body["size_bytes"] = size
    return api("PUT", BACKING.format(branch=branch), params={"path": path}, json=body)


def test_an_address_of_an_object_the_caller_may_not_read_cannot_be_linked(victim):
    v = victim
    bob = v.bob_api
    assert bob("GET", "/repositories/lake/refs/main/objects", params={"path": "secret/x"}).status_code == 401
    listed = bob("GET", "/repositories/lake/refs/main/objects/ls", params={"prefix": "secret/"})
    assert listed.status_code == 200, listed.text
    entry = next(o for o in listed.json()["results"] if o["path"] == "secret/x")
    r = link(bob, "public/x", entry["physical_address"], size=entry["size_bytes"], checksum=entry["checksum"])
    assert r.status_code in (400, 401), (r.status_code, r.text)
    assert stat(v.api, "lake", "main", "public/x").status_code == 404
    read = bob("GET", "/repositories/lake/refs/main/objects", params={"path": "public/x"})
    assert read.status_code == 404 and SECRET_X not in read.content
    # Without a size either, and on another branch.
    assert link(bob, "public/x2", entry["physical_address"]).status_code in (400, 401)
    assert link(bob, "public/x3", entry["physical_address"], branch="dev").status_code in (400, 401)
    for branch, path in [("main", "public/x2"), ("dev", "public/x3")]:
        assert stat(v.api, "lake", branch, path).status_code == 404


def test_an_issued_address_links_once_with_the_size_from_storage(victim):
    v = victim
    bob = v.bob_api
    data = b"written directly by the client" * 10
    address = issue(bob, "public/y")
    write_at(address, data)
    r = link(bob, "public/y", address, size=len(data))
    assert r.status_code == 200, r.text
    assert r.json()["size_bytes"] == len(data)
    st = stat(v.api, "lake", "main", "public/y")
    assert st.status_code == 200 and st.json()["size_bytes"] == len(data)
    got = bob("GET", "/repositories/lake/refs/main/objects", params={"path": "public/y"})
    assert got.status_code == 200 and got.content == data
    # The same address again, to the same or another path: refused, nothing changes.
    assert link(bob, "public/y", address, size=len(data)).status_code in (400, 409)
    assert link(bob, "public/y-again", address, size=len(data)).status_code in (400, 409)
    assert stat(v.api, "lake", "main", "public/y-again").status_code == 404

    # No size: the stored size.
    address = issue(bob, "public/no-size")
    write_at(address, b"12345")
    r = link(bob, "public/no-size", address)
    assert r.status_code == 200, r.text
    assert stat(v.api, "lake", "main", "public/no-size").json()["size_bytes"] == 5


def test_a_size_that_disagrees_with_storage_is_refused(victim):
    v = victim
    bob = v.bob_api
    for wrong in (1, 6, 8, 1 << 40):
        address = issue(bob, "public/lie")
        write_at(address, b"seven b")
        r = link(bob, "public/lie", address, size=wrong)
        assert r.status_code == 400, (wrong, r.status_code, r.text)
        assert stat(v.api, "lake", "main", "public/lie").status_code == 404
    # An address nothing was written at links with the client's size, as lakeFS (lakectl's
    # link-same-object abuse test does exactly this): the address is fresh, so it names no one's data.
    empty = issue(bob, "public/never-written")
    r = link(bob, "public/never-written", empty, size=0)
    assert r.status_code == 200, r.text
    assert r.json()["size_bytes"] == 0


def test_an_address_issued_for_another_path_or_branch_is_refused(victim):
    v = victim
    bob = v.bob_api
    for_path = issue(bob, "public/one")
    write_at(for_path, b"data")
    r = link(bob, "public/two", for_path, size=4)
    assert r.status_code == 400, (r.status_code, r.text)
    assert stat(v.api, "lake", "main", "public/two").status_code == 404
    for_dev = issue(bob, "public/three", branch="dev")
    write_at(for_dev, b"data")
    r = link(bob, "public/three", for_dev, size=4, branch="main")
    assert r.status_code == 400, (r.status_code, r.text)
    assert stat(v.api, "lake", "main", "public/three").status_code == 404
    # Issued to bob for public/*, used by the admin for another path: still that path only.
    r = link(v.api, "secret/z", for_path, size=4)
    assert r.status_code == 400, (r.status_code, r.text)
    assert stat(v.api, "lake", "main", "secret/z").status_code == 404
    # Each still links where it was issued.
    assert link(bob, "public/one", for_path, size=4).status_code == 200
    assert link(bob, "public/three", for_dev, size=4, branch="dev").status_code == 200


def test_an_issued_address_expires(catalog_server):
    v = make_victim(catalog_server(env={"SEDIMENT_CATALOG_LINK_ADDRESS_TTL_SECS": "1"}))
    bob = v.bob_api
    # Addresses issued now, tried one after another until one is refused: each try uses a fresh one,
    # so a refusal can only be the expiry.
    addresses = []
    for i in range(100):
        a = issue(bob, f"public/ttl/{i}")
        write_at(a, b"x")
        addresses.append((f"public/ttl/{i}", a))
    tries = iter(addresses)
    refused = []

    def refused_once():
        path, address = next(tries)
        r = link(bob, path, address, size=1)
        assert r.status_code in (200, 400, 409, 410), (r.status_code, r.text)
        if r.status_code != 200:
            refused.append(path)
        return r.status_code != 200

    eventually(refused_once, timeout=9, interval=0.1, what="a link refused once its address expired")
    assert stat(v.api, "lake", "main", refused[0]).status_code == 404
    # And a fresh one works.
    fresh = issue(bob, "public/ttl/fresh")
    write_at(fresh, b"y")
    assert link(bob, "public/ttl/fresh", fresh, size=1).status_code == 200


@pytest.mark.parametrize("address", [
    "local:///etc/passwd",
    "local://{ns}/../ns-other/data/x",
    "local://{ns}/data/../../ns-other/data/x",
    "local://{ns}/_lakefs/dummy",
    "s3://bucket/data/x",
    "{ns}/data/x",
    "",
])
def test_addresses_outside_what_was_issued_are_refused(victim, address):
    v = victim
    ns = v.server.namespace("lake")[len("local://"):]
    address = address.format(ns=ns)
    r = link(v.bob_api, "public/odd", address, size=1)
    assert r.status_code in (400, 403), (address, r.status_code, r.text)
    assert stat(v.api, "lake", "main", "public/odd").status_code == 404
