"""Attacks through imports (lakeFS's POST .../import): an import reads files where they are, so the
sources it may read are confined: never a repository's namespace (its own or another's: that would
read past the other repository's policies, and point at files its GC deletes), never outside the
namespace roots, never through a symbolic link out of the tree; and only with fs:ImportFromStorage."""
import os

import requests

from security.util import ADMIN, create_repo, create_user, eventually, upload

SECRET = b"the victim's secret"


def start_import(api, repo, source, destination="in/", kind="common_prefix"):
    return api("POST", f"/repositories/{repo}/branches/main/import",
               json={"paths": [{"type": kind, "path": source, "destination": destination}],
                     "commit": {"message": "import"}})


def wait(api, repo, iid):
    """The import's status once it has ended."""
    def ended():
        s = api("GET", f"/repositories/{repo}/branches/main/import", params={"id": iid}).json()
        return s if s.get("completed") or s.get("error") else None
    return eventually(ended, timeout=10, interval=0.1, what=f"import {iid} to end")


def test_an_import_cannot_read_a_repository_namespace(catalog_server, tmp_path):
    server = catalog_server()  # local namespaces anywhere under tmp_path
    api = server.api
    victim_ns, own_ns = f"local://{tmp_path}/victim", f"local://{tmp_path}/mine"
    create_repo(api, "victim", victim_ns)
    assert upload(api, "victim", "main", "secret", SECRET).status_code == 201
    create_repo(api, "mine", own_ns)
    # mallory may import anything into her own repository.
    mallory = api.as_user(create_user(api, "mallory", [
        {"effect": "allow", "action": ["fs:*"], "resource": "arn:lakefs:fs:::repository/mine*"},
        {"effect": "allow", "action": ["fs:ImportFromStorage"], "resource": "*"}]))
    head = api("GET", "/repositories/mine/branches/main").json()["commit_id"]
    for source in [victim_ns + "/", victim_ns + "/data/", f"local://{tmp_path}/", f"local://{tmp_path}",
                   own_ns + "/"]:
        r = start_import(mallory, "mine", source)
        assert r.status_code == 400 and "invalid import source" in r.json()["message"], (source, r.text)
    # Through a link: a directory of hers that points into the victim's namespace.
    os.symlink(f"{tmp_path}/victim", f"{tmp_path}/innocent")
    r = start_import(mallory, "mine", f"local://{tmp_path}/innocent/")
    assert r.status_code == 400 and "invalid import source" in r.json()["message"], r.text
    # Outside the roots: the server's own files, the system's.
    for source in ["local:///etc/", f"local://{server.data_dir}/", "local:///etc/hostname"]:
        r = start_import(mallory, "mine", source, kind="object" if source.endswith("hostname") else "common_prefix",
                         destination="x")
        assert r.status_code == 400 and "import source" in r.json()["message"], (source, r.text)
    assert api("GET", "/repositories/mine/branches/main").json()["commit_id"] == head


def test_a_link_inside_an_imported_tree_is_not_followed(catalog_server, tmp_path):
    server = catalog_server()  # local namespaces anywhere under tmp_path
    api = server.api
    create_repo(api, "victim", f"local://{tmp_path}/victim")
    assert upload(api, "victim", "main", "secret", SECRET).status_code == 201
    create_repo(api, "mine", f"local://{tmp_path}/mine")
    stored = next(p for p in (tmp_path / "victim").rglob("*") if p.is_file() and p.read_bytes() == SECRET)
    src = tmp_path / "src"
    src.mkdir()
    (src / "plain").write_bytes(b"mine")
    os.symlink(stored, src / "stolen")
    os.symlink(tmp_path / "victim", src / "stolen-dir")
    r = start_import(api, "mine", f"local://{src}/")
    assert r.status_code == 202, r.text
    s = wait(api, "mine", r.json()["id"])
    assert s["completed"] and s["ingested_objects"] == 1, s
    listed = [o["path"] for o in api("GET", "/repositories/mine/refs/main/objects/ls").json()["results"]]
    assert listed == ["in/plain"], listed


def test_imports_need_import_from_storage(catalog_server, tmp_path):
    server = catalog_server()  # local namespaces anywhere under tmp_path
    api = server.api
    create_repo(api, "mine", f"local://{tmp_path}/mine")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"x")
    writer = api.as_user(create_user(api, "writer", [
        {"effect": "allow", "action": ["fs:*"], "resource": "arn:lakefs:fs:::repository/mine*"}]))
    r = start_import(writer, "mine", f"local://{tmp_path}/src/")
    assert r.status_code == 401 and "fs:ImportFromStorage" in r.json()["message"], r.text
    # Refused before the source is looked at: without the permission, a source in another repository's
    # namespace, in the server's files or nowhere at all gets the same refusal, naming nothing of them.
    create_repo(api, "hidden", f"local://{tmp_path}/hidden")
    for source in [f"local://{tmp_path}/hidden/", f"local://{tmp_path}/", f"local://{tmp_path}/missing/",
                   f"local://{server.data_dir}/", "local:///etc/"]:
        r = start_import(writer, "mine", source)
        assert r.status_code == 401 and "fs:ImportFromStorage" in r.json()["message"], (source, r.text)
        assert "hidden" not in r.json()["message"].replace(source, ""), r.text
    r = requests.post(server.url + "/api/v1/repositories/mine/branches/main/import", json={}, timeout=10)
    assert r.status_code == 401


# --- issue 41: the server's own files are nobody's import source ---------------------------------------

def test_an_import_cannot_read_the_servers_config_file_or_data_directory(start_server, tmp_path):
    from security.util import Api, catalog_state, set_up_admin
    key = "the-encrypt-secret-key-of-this-server"
    conf = tmp_path / "conf"
    conf.mkdir()
    cfg = conf / "sediment.toml"
    # The namespace root holds the directory of the config file, and the data directory.
    cfg.write_text(f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n[auth]\nencrypt_secret_key = "{key}"\n')
    server = start_server("--config", str(cfg), data_dir=tmp_path / "data")
    set_up_admin(server)
    api = Api(server)
    create_repo(api, "mine", f"local://{tmp_path}/mine")
    (server.data_dir / "planted").write_bytes(b"a file in the data directory")
    os.symlink(conf, tmp_path / "innocent")
    before = catalog_state(api)
    for source, kind in [(f"local://{cfg}", "object"),
                         (f"local://{conf}/", "common_prefix"),
                         (f"local://{conf}", "common_prefix"),
                         (f"local://{tmp_path}/innocent/sediment.toml", "object"),
                         (f"local://{tmp_path}/innocent/", "common_prefix"),
                         (f"local://{server.data_dir}/", "common_prefix"),
                         (f"local://{server.data_dir}/planted", "object"),
                         (f"local://{server.data_dir}/server-id", "object")]:
        r = start_import(api, "mine", source, kind=kind, destination="x" if kind == "object" else "in/")
        assert r.status_code == 400 and "the server's own files" in r.json()["message"], (source, r.text)
        assert key not in r.text
    assert catalog_state(api) == before


def test_a_deleted_repositorys_namespace_cannot_be_imported_while_its_files_remain(catalog_server, tmp_path):
    from security.util import catalog_state
    server = catalog_server()  # local namespaces anywhere under tmp_path
    api = server.api
    gone_ns = tmp_path / "gone"
    create_repo(api, "gone", f"local://{gone_ns}")
    assert upload(api, "gone", "main", "secret", SECRET).status_code == 201
    r = api("POST", "/repositories/gone/branches/main/commits", json={"message": "c"})
    assert r.status_code == 201, r.text
    create_repo(api, "mine", f"local://{tmp_path}/mine")
    assert api("DELETE", "/repositories/gone").status_code == 204
    stored = [p for p in gone_ns.rglob("*") if p.is_file() and p.read_bytes() == SECRET]
    assert stored, "the deleted repository's files are still there (the premise of this test)"
    before = catalog_state(api)
    for source, kind in [(f"local://{gone_ns}/", "common_prefix"), (f"local://{gone_ns}", "common_prefix"),
                         (f"local://{stored[0].parent}/", "common_prefix"), (f"local://{stored[0]}", "object")]:
        r = start_import(api, "mine", source, kind=kind, destination="x" if kind == "object" else "in/")
        assert r.status_code == 400 and "belonged to repository" in r.json()["message"], (source, r.text)
    assert catalog_state(api) == before


def test_an_import_is_read_and_cancelled_through_its_own_branch_only(catalog_server, tmp_path):
    """The status and cancel routes are authorized on the branch in their path, so an import answers
    only there: who may read or cancel imports on dev gets 404 for main's, whatever its id."""
    server = catalog_server()  # local namespaces anywhere under tmp_path
    api = server.api
    create_repo(api, "mine", f"local://{tmp_path}/mine")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"x")
    assert api("POST", "/repositories/mine/branches", json={"name": "dev", "source": "main"}).status_code == 201
    r = start_import(api, "mine", f"local://{tmp_path}/src/")
    assert r.status_code == 202, r.text
    iid = r.json()["id"]
    assert wait(api, "mine", iid).get("completed"), "the import did not complete"
    dev_only = api.as_user(create_user(api, "dev-only", [
        {"effect": "allow", "action": ["fs:ReadBranch", "fs:ImportCancel"],
         "resource": "arn:lakefs:fs:::repository/mine/branch/dev"}]))
    r = dev_only("GET", "/repositories/mine/branches/dev/import", params={"id": iid})
    assert r.status_code == 404, r.text
    r = dev_only("DELETE", "/repositories/mine/branches/dev/import", params={"id": iid})
    assert r.status_code == 404, r.text
    r = dev_only("GET", "/repositories/mine/branches/main/import", params={"id": iid})
    assert r.status_code == 401, r.text
    # Through its own branch, as before.
    assert api("GET", "/repositories/mine/branches/main/import", params={"id": iid}).json()["completed"]
