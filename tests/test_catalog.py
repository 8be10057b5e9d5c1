"""The catalog through the official lakeFS Python SDK (lakefs-sdk) against a real server:
repositories, branches, objects, listing, commits, diff, merge, reset, revert, tags, log, auth."""
import base64
import os
import uuid
from pathlib import Path

import lakefs_sdk
import pytest
import requests
from lakefs_sdk import models as m
from lakefs_sdk.client import LakeFSClient
from lakefs_sdk.exceptions import ApiException

from conftest import ADMIN_KEY, ADMIN_SECRET, eventually, set_up_admin


def client_for(url, key, secret):
    return LakeFSClient(lakefs_sdk.Configuration(host=url + "/api/v1", username=key, password=secret))


def status_of(fn, *args, **kw):
    with pytest.raises(ApiException) as e:
        fn(*args, **kw)
    return e.value.status


@pytest.fixture
def lakefs(start_server, tmp_path, backend):
    cfg = tmp_path / "sediment.toml"
    # Namespaces: local ones next to the data dir, so the root is the test's directory; on S3 under
    # the test's prefix of the bucket, the only place allowed.
    base = backend.split('objects = "')[1].split('"')[0] if 'objects = "s3://' in backend else None
    settings = f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n'
    if base:
        settings += f's3_namespace_prefixes = ["{base}"]\n'
    cfg.write_text(backend + settings)
    server = start_server("--config", str(cfg))
    setup = LakeFSClient(lakefs_sdk.Configuration(host=server.url + "/api/v1"))
    assert setup.internal_api.get_setup_state().state == "not_initialized"
    creds = set_up_admin(server)
    assert creds["access_key_id"] == ADMIN_KEY
    client = client_for(server.url, ADMIN_KEY, ADMIN_SECRET)
    client.server = server
    if base:
        client.namespace = lambda name: f"{base}/{name}"
    else:
        client.namespace = lambda name: f"local://{tmp_path}/ns-{name}"
    return client


def make_repo(c, name="repo1"):
    return c.repositories_api.create_repository(
        m.RepositoryCreation(name=name, storage_namespace=c.namespace(name), default_branch="main"))


def upload(c, path, data, branch="main", repo="repo1"):
    return c.objects_api.upload_object(repo, branch, path, content=data)


def list_paths(c, ref, repo="repo1", **kw):
    """Walks every page; returns (paths, number of pages)."""
    paths, after, pages = [], "", 0
    while True:
        res = c.objects_api.list_objects(repo, ref, after=after, **kw)
        pages += 1
        paths += [o.path for o in res.results]
        if not res.pagination.has_more:
            return paths, pages
        after = res.pagination.next_offset


def test_repository_lifecycle_and_bad_input(lakefs):
    c = lakefs
    repo = make_repo(c)
    assert repo.id == "repo1" and repo.default_branch == "main"
    assert [r.id for r in c.repositories_api.list_repositories().results] == ["repo1"]
    assert status_of(make_repo, c) == 409
    # A storage namespace already used by another repository.
    assert status_of(c.repositories_api.create_repository,
                     m.RepositoryCreation(name="repo2", storage_namespace=c.namespace("repo1"))) == 409
    assert status_of(c.repositories_api.get_repository, "repo2") == 404
    bad = requests.post(c.server.url + "/api/v1/repositories", data="{not json",
                        headers={"Content-Type": "application/json"}, auth=(ADMIN_KEY, ADMIN_SECRET), timeout=10)
    assert bad.status_code == 400 and "JSON" in bad.json()["message"]
    bad = requests.post(c.server.url + "/api/v1/repositories", auth=(ADMIN_KEY, ADMIN_SECRET), timeout=10,
                        json={"name": "Bad_Name", "storage_namespace": c.namespace("x")})
    assert bad.status_code == 400 and "invalid repository name" in bad.json()["message"]
    log = c.refs_api.log_commits("repo1", "main")
    assert [x.message for x in log.results] == ["Repository created"]
    c.repositories_api.delete_repository("repo1")
    assert status_of(c.repositories_api.get_repository, "repo1") == 404


def test_objects_listing_and_ranges(lakefs):
    c = lakefs
    make_repo(c)
    stats = upload(c, "data/a.txt", b"hello world")
    assert stats.size_bytes == 11 and stats.checksum
    for d in range(3):
        for f in range(5):
            upload(c, f"dir{d}/f{f}.bin", bytes([d, f]) * 10)
    upload(c, "top.txt", b"top")
    # Raw octet-stream upload too, with user metadata.
    r = requests.post(c.server.url + "/api/v1/repositories/repo1/branches/main/objects",
                      params={"path": "raw.bin"}, data=b"\x00\x01\x02", auth=(ADMIN_KEY, ADMIN_SECRET),
                      headers={"Content-Type": "application/x-test", "X-Lakefs-Meta-Owner": "me"}, timeout=10)
    assert r.status_code == 201, r.text
    st = c.objects_api.stat_object("repo1", "main", "raw.bin", user_metadata=True)
    assert st.size_bytes == 3 and st.content_type == "application/x-test" and st.metadata == {"owner": "me"}

    assert bytes(c.objects_api.get_object("repo1", "main", "data/a.txt")) == b"hello world"
    assert bytes(c.objects_api.get_object("repo1", "main", "data/a.txt", range="bytes=6-10")) == b"world"
    # Ranges past the end are clamped to the object (the console previews the first 64 KiB of anything);
    # a range that starts past it is a 416, and several ranges serve the whole object.
    obj = c.server.url + "/api/v1/repositories/repo1/refs/main/objects"
    get = lambda rng: requests.get(obj, params={"path": "data/a.txt"}, headers={"Range": rng},
                                   auth=(ADMIN_KEY, ADMIN_SECRET), timeout=10)
    r = get("bytes=0-65535")
    assert (r.status_code, r.content, r.headers["Content-Range"]) == (206, b"hello world", "bytes 0-10/11")
    # Stored bytes never run as a page of the console's origin.
    assert r.headers["Content-Security-Policy"] == "sandbox" and r.headers["X-Content-Type-Options"] == "nosniff"
    r = get("bytes=-100")
    assert (r.status_code, r.content) == (206, b"hello world")
    assert (get("bytes=4-").status_code, get("bytes=4-").content) == (206, b"o world")
    r = get("bytes=11-20")
    assert r.status_code == 416 and "not satisfiable for 11 bytes" in r.json()["message"]
    assert r.headers["Content-Range"] == "bytes */11"
    assert (get("bytes=0-1,3-4").status_code, get("bytes=0-1,3-4").content) == (200, b"hello world")

    for ref in ["main"]:
        delimited, pages = list_paths(c, ref, delimiter="/", amount=2)
        assert delimited == ["data/", "dir0/", "dir1/", "dir2/", "raw.bin", "top.txt"]
        assert pages == 3
        flat, pages = list_paths(c, ref, amount=4)
        assert len(flat) == 18 and flat == sorted(flat) and pages == 5
        assert list_paths(c, ref, prefix="dir1/")[0] == [f"dir1/f{i}.bin" for i in range(5)]

    c.objects_api.delete_object("repo1", "main", "top.txt")
    c.objects_api.delete_object("repo1", "main", "top.txt")  # deleting what is gone succeeds, as in lakeFS
    assert status_of(c.objects_api.stat_object, "repo1", "main", "top.txt") == 404
    c.objects_api.delete_objects("repo1", "main", m.PathList(paths=["dir0/f0.bin", "dir0/f1.bin", "nope"]))
    assert list_paths(c, "main", prefix="dir0/")[0] == ["dir0/f2.bin", "dir0/f3.bin", "dir0/f4.bin"]

    # If-None-Match: * refuses to overwrite.
    assert status_of(c.objects_api.upload_object, "repo1", "main", "data/a.txt", content=b"x", if_none_match="*") == 412
    upload(c, "new.txt", b"x")


def test_bad_object_input_is_rejected_and_nothing_is_written(lakefs):
    c = lakefs
    make_repo(c)
    auth = (ADMIN_KEY, ADMIN_SECRET)
    url = c.server.url + "/api/v1/repositories/repo1/branches/main/objects"
    assert requests.post(url, params={"path": ""}, data=b"x", auth=auth, timeout=10).status_code == 400
    assert requests.post(url, params={"path": "a" * 2000}, data=b"x", auth=auth, timeout=10).status_code == 400
    assert requests.post(url, data=b"x", auth=auth, timeout=10).status_code == 400  # no path
    assert requests.post(c.server.url + "/api/v1/repositories/repo1/branches/nope/objects", params={"path": "a"},
                         data=b"x", auth=auth, timeout=10).status_code == 404
    # An upload cut off mid-body leaves no entry.
    import socket
    s = socket.create_connection(("127.0.0.1", c.server.port))
    cred = base64.b64encode(f"{ADMIN_KEY}:{ADMIN_SECRET}".encode()).decode()
    s.sendall((f"POST /api/v1/repositories/repo1/branches/main/objects?path=cut.bin HTTP/1.1\r\n"
               f"Host: x\r\nAuthorization: Basic {cred}\r\nContent-Length: 100000\r\n"
               f"Content-Type: application/octet-stream\r\n\r\n").encode() + b"x" * 1000)
    s.close()

    def upload_refused():  # the server has seen the cut-off body end (its 400 is counted)
        metrics = requests.get(c.server.url + "/metrics", timeout=10).text
        return any(line.startswith('http_requests_total{method="POST"') and 'route="lakefs UploadObject",code="400"' in line
                   for line in metrics.splitlines())
    eventually(upload_refused, what="the server to refuse the cut-off upload")
    assert status_of(c.objects_api.stat_object, "repo1", "main", "cut.bin") == 404
    assert list_paths(c, "main")[0] == []


def test_commit_diff_merge_reset_revert_tags(lakefs):
    c = lakefs
    make_repo(c)
    upload(c, "a", b"1")
    upload(c, "b", b"2")
    diff = c.branches_api.diff_branch("repo1", "main")
    assert [(d.path, d.type) for d in diff.results] == [("a", "added"), ("b", "added")]
    c1 = c.commits_api.commit("repo1", "main", m.CommitCreation(message="first", metadata={"k": "v"}))
    assert c1.committer == "admin" and c1.metadata == {"k": "v"} and len(c1.parents) == 1
    assert c.commits_api.get_commit("repo1", c1.id).message == "first"
    assert c.branches_api.diff_branch("repo1", "main").results == []
    assert status_of(c.commits_api.commit, "repo1", "main", m.CommitCreation(message="empty")) == 400

    c.branches_api.create_branch("repo1", m.BranchCreation(name="feature", source="main"))
    assert status_of(c.branches_api.create_branch, "repo1", m.BranchCreation(name="feature", source="main")) == 409
    assert {b.id for b in c.branches_api.list_branches("repo1").results} == {"main", "feature"}
    upload(c, "c", b"3", branch="feature")
    upload(c, "a", b"1-feature", branch="feature")
    c.commits_api.commit("repo1", "feature", m.CommitCreation(message="feature work"))
    d = c.refs_api.diff_refs("repo1", "main", "feature")
    assert [(x.path, x.type) for x in d.results] == [("a", "changed"), ("c", "added")]

    res = c.refs_api.merge_into_branch("repo1", "feature", "main")
    merged = c.commits_api.get_commit("repo1", res.reference)
    assert len(merged.parents) == 2
    assert bytes(c.objects_api.get_object("repo1", "main", "a")) == b"1-feature"

    # Conflict, then dest-wins.
    upload(c, "b", b"feature-b", branch="feature")
    c.commits_api.commit("repo1", "feature", m.CommitCreation(message="f2"))
    upload(c, "b", b"main-b")
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="m2"))
    assert status_of(c.refs_api.merge_into_branch, "repo1", "feature", "main") == 409
    c.refs_api.merge_into_branch("repo1", "feature", "main", merge=m.Merge(strategy="dest-wins"))
    assert bytes(c.objects_api.get_object("repo1", "main", "b")) == b"main-b"

    # Reset: one object, a prefix, everything.
    upload(c, "a", b"dirty")
    upload(c, "p/x", b"x")
    upload(c, "q", b"q")
    c.branches_api.reset_branch("repo1", "main", m.ResetCreation(type="object", path="a"))
    assert bytes(c.objects_api.get_object("repo1", "main", "a")) == b"1-feature"
    c.branches_api.reset_branch("repo1", "main", m.ResetCreation(type="common_prefix", path="p/"))
    assert [x.path for x in c.branches_api.diff_branch("repo1", "main").results] == ["q"]
    # A dirty branch cannot be merged into, reverted or hard-reset.
    head = c.branches_api.get_branch("repo1", "main").commit_id
    assert status_of(c.branches_api.revert_branch, "repo1", "main", m.RevertCreation(ref=head, parent_number=1)) == 400
    assert status_of(c.experimental_api.hard_reset_branch, "repo1", "main", c1.id) == 400
    c.branches_api.reset_branch("repo1", "main", m.ResetCreation(type="reset"))
    assert c.branches_api.diff_branch("repo1", "main").results == []

    # The dest-wins merge changed nothing, so reverting it is refused; reverting "m2" (main~1) restores b.
    assert status_of(c.branches_api.revert_branch, "repo1", "main", m.RevertCreation(ref="main", parent_number=1)) == 400
    c.branches_api.revert_branch("repo1", "main", m.RevertCreation(ref="main~1", parent_number=1))
    assert bytes(c.objects_api.get_object("repo1", "main", "b")) == b"2"
    log = c.refs_api.log_commits("repo1", "main", amount=2)
    assert log.results[0].message.startswith("Revert") and log.pagination.has_more
    rest = c.refs_api.log_commits("repo1", "main", after=log.pagination.next_offset, amount=100)
    assert rest.results[-1].message == "Repository created"

    # Tags.
    t = c.tags_api.create_tag("repo1", m.TagCreation(id="v1", ref=c1.id))
    assert t.commit_id == c1.id
    assert status_of(c.tags_api.create_tag, "repo1", m.TagCreation(id="v1", ref="main")) == 409
    assert [x.id for x in c.tags_api.list_tags("repo1").results] == ["v1"]
    assert bytes(c.objects_api.get_object("repo1", "v1", "a")) == b"1"
    c.tags_api.delete_tag("repo1", "v1")
    assert status_of(c.tags_api.get_tag, "repo1", "v1") == 404

    # Hard reset a clean branch.
    c.experimental_api.hard_reset_branch("repo1", "feature", c1.id)
    assert c.branches_api.get_branch("repo1", "feature").commit_id == c1.id
    assert status_of(c.branches_api.delete_branch, "repo1", "main") == 403
    c.branches_api.delete_branch("repo1", "feature")
    assert status_of(c.branches_api.get_branch, "repo1", "feature") == 404


def test_auth_failures_and_policies(lakefs):
    c = lakefs
    make_repo(c)
    upload(c, "a", b"1")
    url = c.server.url
    assert status_of(client_for(url, ADMIN_KEY, "wrong-secret").repositories_api.list_repositories) == 401
    assert status_of(LakeFSClient(lakefs_sdk.Configuration(host=url + "/api/v1")).repositories_api.list_repositories) == 401
    assert requests.get(url + "/api/v1/repositories", timeout=10).status_code == 401
    # Setting up twice is refused.
    assert status_of(c.internal_api.setup, m.Setup(username="again")) == 409

    c.auth_api.create_user(m.UserCreation(id="reader"))
    creds = c.auth_api.create_credentials("reader")
    reader = client_for(url, creds.access_key_id, creds.secret_access_key)
    # No policy: authenticated, but forbidden.
    assert status_of(reader.objects_api.list_objects, "repo1", "main") == 401
    c.auth_api.create_policy(m.Policy(id="ReadRepo1", statement=[
        m.Statement(effect="allow", action=["fs:ReadObject", "fs:ListObjects", "fs:ReadRepository"],
                    resource="arn:lakefs:fs:::repository/repo1*")]))
    c.auth_api.attach_policy_to_user("reader", "ReadRepo1")
    assert [o.path for o in reader.objects_api.list_objects("repo1", "main").results] == ["a"]
    assert bytes(reader.objects_api.get_object("repo1", "main", "a")) == b"1"
    assert status_of(reader.objects_api.upload_object, "repo1", "main", "b", content=b"x") == 401
    assert status_of(reader.commits_api.commit, "repo1", "main", m.CommitCreation(message="no")) == 401
    assert status_of(reader.auth_api.create_user, m.UserCreation(id="evil")) == 401
    assert status_of(c.objects_api.stat_object, "repo1", "main", "b") == 404  # the refused upload wrote nothing
    c.auth_api.delete_credentials("reader", creds.access_key_id)
    assert status_of(reader.objects_api.list_objects, "repo1", "main") == 401


def test_cli_repo_branch_object_commit(start_server, tmp_path):
    from conftest import run_sediment
    server = start_server()
    env = {"SEDIMENT_URL": server.url}
    code, out = run_sediment("setup", "--access-key-id", "AKIACLI", "--secret-access-key", "cli-secret-1", env=env)
    assert code == 0, out
    env.update(SEDIMENT_ACCESS_KEY_ID="AKIACLI", SEDIMENT_SECRET_ACCESS_KEY="cli-secret-1")
    ns = f"local://{server.data_dir}/namespaces/cli-repo"  # under the default root
    assert run_sediment("repo", "create", "cli-repo", ns, env=env)[0] == 0
    f = tmp_path / "f.txt"
    f.write_bytes(b"payload")
    assert run_sediment("object", "put", "cli-repo", "main", "dir/f.txt", str(f), env=env)[0] == 0
    code, out = run_sediment("object", "ls", "cli-repo", "main", "--delimiter", "/", env=env)
    assert (code, out) == (0, "dir/")
    code, out = run_sediment("diff", "cli-repo", "main", env=env)
    assert (code, out) == (0, "added\tdir/f.txt")
    assert run_sediment("commit", "cli-repo", "main", "-m", "from the cli", env=env)[0] == 0
    code, out = run_sediment("log", "cli-repo", "main", env=env)
    assert code == 0 and "from the cli" in out.splitlines()[0]
    assert run_sediment("branch", "create", "cli-repo", "dev", env=env)[0] == 0
    code, out = run_sediment("object", "get", "cli-repo", "dev", "dir/f.txt", env=env)
    assert (code, out) == (0, "payload")
    code, out = run_sediment("object", "get", "cli-repo", "main", "missing", env=env)
    assert code == 1 and "404" in out and "missing" in out
    env["SEDIMENT_SECRET_ACCESS_KEY"] = "wrong"
    code, out = run_sediment("repo", "list", env=env)
    assert code == 1 and "401" in out


def compact_url(c, branch="main"):
    return f"{c.server.url}/api/v1/repositories/repo1/branches/{branch}/compact"


def wait_compacted(c, branch="main", timeout=30):
    def finished():
        j = requests.get(compact_url(c, branch), auth=(ADMIN_KEY, ADMIN_SECRET), timeout=10).json()
        return j if j["last_compaction"]["state"] not in ("", "running") else None
    return eventually(finished, timeout=timeout, what=f"the compaction of {branch} to finish")


def test_staging_compaction_over_http(lakefs):
    c = lakefs
    make_repo(c)
    for d in range(4):
        for f in range(30):
            upload(c, f"dir{d}/f{f:03d}", f"{d}-{f}".encode())
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="base"))
    for f in range(0, 60, 3):
        upload(c, f"dir1/f{f:03d}", b"changed")
    c.objects_api.delete_object("repo1", "main", "dir2/f000")
    before = (list_paths(c, "main", amount=7), list_paths(c, "main", delimiter="/", amount=1),
              [(d.path, d.type) for d in c.branches_api.diff_branch("repo1", "main", amount=1000).results])

    auth = (ADMIN_KEY, ADMIN_SECRET)
    j = requests.get(compact_url(c), auth=auth, timeout=10).json()
    assert j["compacted"] is False and j["meta_range_id"] == ""
    r = requests.post(compact_url(c), auth=auth, timeout=10)
    assert r.status_code == 202, r.text
    j = wait_compacted(c)
    assert j["compacted"] is True and len(j["meta_range_id"]) == 64 and j["last_compaction"]["state"] == "completed"

    after = (list_paths(c, "main", amount=7), list_paths(c, "main", delimiter="/", amount=1),
             [(d.path, d.type) for d in c.branches_api.diff_branch("repo1", "main", amount=1000).results])
    assert after == before
    # Still uncommitted: merge is refused like on a dirty branch; commit takes it all.
    c.branches_api.create_branch("repo1", m.BranchCreation(name="side", source="main@"))
    upload(c, "side-only", b"s", branch="side")
    c.commits_api.commit("repo1", "side", m.CommitCreation(message="side"))
    assert status_of(c.refs_api.merge_into_branch, "repo1", "side", "main") == 400
    upload(c, "late", b"after compaction")
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="with compaction"))
    assert requests.get(compact_url(c), auth=auth, timeout=10).json()["compacted"] is False
    assert len(list_paths(c, "main@")[0]) == 130  # 120 base, -1 deleted, +10 new in dir1, +1 late
    c.refs_api.merge_into_branch("repo1", "side", "main")

    # Metrics: the histogram by outcome.
    text = requests.get(c.server.url + "/metrics", timeout=10).text
    assert 'graveler_compaction_seconds_count{outcome="completed"} 1' in text


def test_compaction_needs_the_compact_permission(lakefs):
    c = lakefs
    make_repo(c)
    upload(c, "a", b"1")
    c.auth_api.create_user(m.UserCreation(id="writer"))
    creds = c.auth_api.create_credentials("writer")
    c.auth_api.create_policy(m.Policy(id="WriteAll", statement=[
        m.Statement(effect="allow", action=["fs:*"], resource="*")]))
    c.auth_api.attach_policy_to_user("writer", "WriteAll")
    auth = (creds.access_key_id, creds.secret_access_key)
    assert requests.post(compact_url(c), auth=auth, timeout=10).status_code == 401
    assert requests.get(compact_url(c), auth=auth, timeout=10).status_code == 401
    assert requests.post(compact_url(c), timeout=10).status_code == 401
    c.auth_api.create_policy(m.Policy(id="Compact", statement=[
        m.Statement(effect="allow", action=["branches:CompactBranch"], resource="arn:lakefs:fs:::repository/repo1/branch/*")]))
    c.auth_api.attach_policy_to_user("writer", "Compact")
    assert requests.post(compact_url(c), auth=auth, timeout=10).status_code == 202
    assert requests.post(compact_url(c, "nope"), auth=auth, timeout=10).status_code == 404


def test_cli_branch_compact_wait_and_status(lakefs):
    from conftest import run_sediment
    c = lakefs
    make_repo(c)
    for i in range(50):
        upload(c, f"k{i:03d}", b"v")
    env = {"SEDIMENT_URL": c.server.url, "SEDIMENT_ACCESS_KEY_ID": ADMIN_KEY, "SEDIMENT_SECRET_ACCESS_KEY": ADMIN_SECRET}
    code, out = run_sediment("branch", "compact", "repo1", "main", "--wait", env=env)
    assert code == 0, out
    assert '"state": "completed"' in out and "compacting repo1/main" in out
    code, out = run_sediment("branch", "compaction-status", "repo1", "main", env=env)
    assert code == 0 and '"compacted": true' in out


def test_auto_trigger_from_the_environment(start_server, tmp_path):
    server = start_server(env={"LAKEFS_GRAVELER_COMPACTION_AUTO_TRIGGER": "true",
                               "LAKEFS_GRAVELER_COMPACTION_THRESHOLD": "20",
                               "SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS": str(tmp_path)})
    set_up_admin(server)
    c = client_for(server.url, ADMIN_KEY, ADMIN_SECRET)
    c.server = server
    c.namespace = lambda name: f"local://{tmp_path}/ns-{name}"
    make_repo(c)
    for i in range(19):
        upload(c, f"k{i:03d}", b"v")
    # Counts are flushed every second: once the 19 are stored, they are below the threshold.
    j = eventually(lambda: (lambda j: j if j["staged_mutations"] >= 19 else None)(
        requests.get(compact_url(c), auth=(ADMIN_KEY, ADMIN_SECRET), timeout=10).json()), what="the counts' flush")
    assert j["compacted"] is False
    upload(c, "k019", b"v")
    j = wait_compacted(c)
    assert j["compacted"] is True
    assert [o.path for o in c.objects_api.list_objects("repo1", "main", amount=1000).results] == \
        [f"k{i:03d}" for i in range(20)]


def test_high_level_lakefs_package(lakefs):
    """The higher-level `lakefs` package (built on lakefs-sdk) works unchanged."""
    import lakefs as hl
    from lakefs.client import Client
    c = Client(host=lakefs.server.url, username=ADMIN_KEY, password=ADMIN_SECRET)
    repo = hl.Repository("hl-repo", client=c).create(storage_namespace=lakefs.namespace("hl-repo"))
    main = repo.branch("main")
    main.object("a/b.txt").upload(data=b"hello", content_type="text/plain")
    with main.object("a/b.txt").reader() as r:
        assert r.read() == b"hello"
    assert main.commit(message="first").get_commit().message == "first"
    dev = repo.branch("dev").create(source_reference="main")
    dev.object("c.txt").upload(data=b"c")
    assert [d.path for d in dev.uncommitted()] == ["c.txt"]
    dev.commit(message="dev work")
    dev.merge_into(main)
    assert [x.message for x in main.log(max_amount=4)] == ["Merge 'dev' into 'main'", "dev work", "first",
                                                           "Repository created"]
    assert [o.path for o in main.objects(delimiter="/")] == ["a/", "c.txt"]
    assert main.object("c.txt").stat().size_bytes == 1


def test_tables_and_jobs_need_credentials_once_set_up(start_server, tmp_path):
    from conftest import run_sediment
    from tables_util import ipc
    server = start_server()
    t = "/api/v1/datasets/eth/tables/logs"
    assert server.put(t, data=ipc()).status_code == 201, "open before set-up"
    set_up_admin(server)
    r = server.get(t)
    assert r.status_code == 401 and "WWW-Authenticate" not in r.headers, "no Basic challenge for a browser to cache"
    assert server.get("/api/v1/jobs").status_code == 401
    assert server.get(t, auth=(ADMIN_KEY, ADMIN_SECRET)).status_code == 200
    # A user allowed to read tables, not to write them.
    admin = client_for(server.url, ADMIN_KEY, ADMIN_SECRET)
    admin.auth_api.create_user(m.UserCreation(id="analyst"))
    creds = admin.auth_api.create_credentials("analyst")
    admin.auth_api.create_policy(m.Policy(id="ReadTables", statement=[
        m.Statement(effect="allow", action=["tables:ReadTable"], resource="arn:sediment:tables:::eth/*")]))
    admin.auth_api.attach_policy_to_user("analyst", "ReadTables")
    analyst = (creds.access_key_id, creds.secret_access_key)
    assert server.get(t, auth=analyst).status_code == 200
    assert server.get(t + "/files", auth=analyst).status_code == 200
    r = server.post(t + "/compact", auth=analyst)
    assert r.status_code == 403 and "tables:WriteTable" in r.json()["message"]
    assert server.get("/api/v1/datasets/other/tables/x", auth=analyst).status_code == 403
    # The CLI sends the credentials from the environment.
    env = {"SEDIMENT_URL": server.url}
    code, out = run_sediment("table", "list", env=env)
    assert code == 1 and "401" in out
    env.update(SEDIMENT_ACCESS_KEY_ID=ADMIN_KEY, SEDIMENT_SECRET_ACCESS_KEY=ADMIN_SECRET)
    code, out = run_sediment("table", "list", env=env)
    assert code == 0 and "eth.logs" in out


def test_bad_api_input_is_a_clear_400_and_changes_nothing(lakefs):
    c = lakefs
    make_repo(c)
    upload(c, "a", b"1")
    auth = (ADMIN_KEY, ADMIN_SECRET)
    base = c.server.url + "/api/v1/repositories/repo1"
    cases = [
        ("put", "/branches/main", {"type": "everything"}, "reset type \"everything\""),
        ("put", "/branches/main", {}, "missing required field \"type\""),
        ("post", "/refs/main/merge/main", {"strategy": "mine-wins"}, "merge strategy \"mine-wins\""),
        ("post", "/branches/main/commits", {"message": 5}, "field \"message\" has the wrong type"),
        ("post", "/branches", {"name": "dev"}, "missing required field \"source\""),
        ("post", "/branches", {"name": "-dev", "source": "main"}, "invalid branch name \"-dev\""),
        ("post", "/branches", {"name": "dev", "source": "no-such-ref"}, None),
        ("post", "/tags", {"id": "v1", "ref": "no-such-ref"}, None),
        ("post", "/branches/main/objects/delete", {"paths": "a"}, "field \"paths\" has the wrong type"),
        ("get", "/refs/main/objects/ls?amount=lots", None, "amount=\"lots\""),
        ("get", "/refs/main/diff/main?type=four_dot", None, "diff type \"four_dot\""),
        ("put", "/branches/main/hard_reset", None, "missing query parameter ref"),
    ]
    for method, path, body, message in cases:
        r = getattr(requests, method)(base + path, json=body, auth=auth, timeout=10)
        if message is None:
            assert r.status_code == 404, (path, r.status_code, r.text)
        else:
            assert r.status_code == 400, (path, r.status_code, r.text)
            assert message in r.json()["message"], (path, r.json())
    # Nothing changed: one branch, one staged object, no tags, the initial commit only.
    assert [b.id for b in c.branches_api.list_branches("repo1").results] == ["main"]
    assert [o.path for o in c.objects_api.list_objects("repo1", "main").results] == ["a"]
    assert c.tags_api.list_tags("repo1").results == []
    assert [x.message for x in c.refs_api.log_commits("repo1", "main").results] == ["Repository created"]


def test_huge_ancestor_count_is_a_clear_400(lakefs):
    c = lakefs
    make_repo(c)
    auth = (ADMIN_KEY, ADMIN_SECRET)
    base = c.server.url + "/api/v1/repositories/repo1/refs"
    for ref, count in [("main~99999999999", "~99999999999"), ("main^99999999999", "^99999999999"),
                       ("main~" + "9" * 40, "~" + "9" * 40)]:
        r = requests.get(f"{base}/{ref}/objects/ls", auth=auth, timeout=10)
        assert r.status_code == 400, (ref, r.status_code, r.text)
        assert ref in r.json()["message"] and count + " is too large" in r.json()["message"], r.json()
    assert requests.get(f"{base}/main~5/objects/ls", auth=auth, timeout=10).status_code == 404  # as before


def test_a_deleted_policy_is_not_granted_to_its_old_holders(lakefs):
    c = lakefs
    make_repo(c)
    upload(c, "a", b"1")
    c.auth_api.create_user(m.UserCreation(id="holder"))
    creds = c.auth_api.create_credentials("holder")
    holder = client_for(c.server.url, creds.access_key_id, creds.secret_access_key)
    read = m.Policy(id="Read", statement=[m.Statement(effect="allow", action=["fs:*"], resource="*")])
    c.auth_api.create_policy(read)
    c.auth_api.attach_policy_to_user("holder", "Read")
    assert [o.path for o in holder.objects_api.list_objects("repo1", "main").results] == ["a"]
    c.auth_api.delete_policy("Read")
    c.auth_api.create_policy(read)  # the same id again: granted to nobody
    assert c.auth_api.list_user_policies("holder").results == []
    assert status_of(holder.objects_api.list_objects, "repo1", "main") == 401


def test_a_recreated_branch_starts_without_the_old_ones_compaction_state(lakefs):
    c = lakefs
    make_repo(c)
    c.branches_api.create_branch("repo1", m.BranchCreation(name="dev", source="main"))
    upload(c, "a", b"1", branch="dev")
    auth = (ADMIN_KEY, ADMIN_SECRET)
    assert requests.post(compact_url(c, "dev"), auth=auth, timeout=10).status_code == 202
    assert wait_compacted(c, "dev")["last_compaction"]["state"] == "completed"
    c.branches_api.delete_branch("repo1", "dev")
    c.branches_api.create_branch("repo1", m.BranchCreation(name="dev", source="main"))
    j = requests.get(compact_url(c, "dev"), auth=auth, timeout=10).json()
    assert j["last_compaction"]["state"] == "" and j["compacted"] is False, j


def test_concurrent_if_none_match_uploads_have_one_winner(lakefs):
    from concurrent.futures import ThreadPoolExecutor
    c = lakefs
    make_repo(c)
    url = c.server.url + "/api/v1/repositories/repo1/branches/main/objects"

    def put(args):
        path, i = args
        return requests.post(url, params={"path": path}, data=f"writer {i}".encode(), headers={"If-None-Match": "*"},
                             auth=(ADMIN_KEY, ADMIN_SECRET), timeout=30).status_code

    paths = [f"p{n}" for n in range(20)]
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(put, [(p, i) for p in paths for i in range(8)]))
    for n, p in enumerate(paths):
        got = sorted(codes[n * 8:(n + 1) * 8])
        assert got == [201] + [412] * 7, (p, got)


def test_concurrent_setups_create_one_admin(start_server):
    from concurrent.futures import ThreadPoolExecutor
    server = start_server()

    def setup(i):
        return requests.post(server.url + "/api/v1/setup_lakefs", timeout=30, json={
            "username": f"admin{i}", "key": {"access_key_id": f"AKIASETUP{i}", "secret_access_key": f"secret-{i}-xx"}})

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(setup, range(8)))
    assert sorted(r.status_code for r in replies) == [200] + [409] * 7, [r.text for r in replies]
    working = [i for i in range(8) if requests.get(server.url + "/api/v1/user", timeout=10,
                                                   auth=(f"AKIASETUP{i}", f"secret-{i}-xx")).status_code == 200]
    assert len(working) == 1, working


# --- storage namespaces: where a repository may keep its files (docs/catalog.md) ---------------------

def admin_client(server):
    set_up_admin(server)
    c = client_for(server.url, ADMIN_KEY, ADMIN_SECRET)
    c.server = server
    return c


def create_repo_raw(c, name, ns):
    return requests.post(c.server.url + "/api/v1/repositories", auth=(ADMIN_KEY, ADMIN_SECRET), timeout=30,
                         json={"name": name, "storage_namespace": ns})


def tree(d):
    """Every path under `d`, relative and sorted; None if `d` does not exist."""
    d = Path(d)
    if not d.exists():
        return None
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def test_local_namespaces_outside_the_roots_are_refused_and_nothing_is_written(start_server, tmp_path):
    server = start_server(cwd=tmp_path)  # the default root: <data_dir>/namespaces
    c = admin_client(server)
    root = server.data_dir / "namespaces"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.txt").write_text("someone else's")
    root.mkdir(parents=True)
    (root / "link").symlink_to(outside, target_is_directory=True)
    cases = [
        f"local://{outside}/repo",  # plainly elsewhere
        f"local://{outside}",  # elsewhere, and someone's files are there
        str(outside / "bare"),  # a plain path
        f"file://{outside}/uri",
        f"local://{root}/../../outside/dotdot",  # '..' out of the root
        f"local://{root}/link/through",  # a symlink inside the root that leads out
        f"local://{root}/link",
        f"local://{root}",  # the root itself holds every namespace, it is none
        f"local://{server.data_dir}/kv",  # the server's own files
    ]
    for i, ns in enumerate(cases):
        r = create_repo_raw(c, f"bad{i}", ns)
        assert r.status_code == 400, (ns, r.status_code, r.text)
        message = r.json()["message"]
        assert ns in message and str(root) in message, (ns, message)
    r = create_repo_raw(c, "relative", "local://relative/path")
    assert r.status_code == 400 and "local://relative/path" in r.json()["message"], r.text
    assert not (tmp_path / "relative").exists()
    # Nothing was recorded or written anywhere.
    assert c.repositories_api.list_repositories().results == []
    assert tree(outside) == ["theirs.txt"]
    assert tree(root) == ["link"]
    assert tree(server.data_dir / "kv" / "_lakefs") is None
    # The same name works with a namespace under the root.
    assert create_repo_raw(c, "bad0", f"local://{root}/good").status_code == 201


def test_a_namespace_that_already_holds_files_is_refused_and_left_untouched(start_server):
    server = start_server()
    c = admin_client(server)
    root = server.data_dir / "namespaces"
    taken = root / "taken"
    (taken / "sub").mkdir(parents=True)
    (taken / "sub" / "report.csv").write_text("a,b\n")
    r = create_repo_raw(c, "repo1", f"local://{taken}")
    assert r.status_code == 409, r.text
    assert f"local://{taken}" in r.json()["message"] and "sub/report.csv" in r.json()["message"], r.text
    assert tree(taken) == ["sub", "sub/report.csv"]
    assert c.repositories_api.list_repositories().results == []
    # An empty directory, one that does not exist yet, and the bare marker a creation cut off left are fine.
    (root / "empty").mkdir()
    (root / "leftover" / "_lakefs").mkdir(parents=True)
    (root / "leftover" / "_lakefs" / "dummy").write_bytes(b"")
    assert create_repo_raw(c, "repo1", f"local://{root}/empty").status_code == 201
    assert create_repo_raw(c, "repo2", f"local://{root}/new/deeper").status_code == 201
    assert create_repo_raw(c, "repo3", f"local://{root}/leftover").status_code == 201
    # Inside another repository's namespace, or around one: refused, nothing written.
    r = create_repo_raw(c, "repo4", f"local://{root}/empty/data")
    assert r.status_code == 409 and '"repo1"' in r.json()["message"], r.text
    assert not (root / "empty" / "data").exists()
    r = create_repo_raw(c, "repo4", f"local://{root}/new")
    assert r.status_code == 409 and '"repo2"' in r.json()["message"], r.text
    # A deleted repository's files stay behind, so its namespace is not reused.
    upload(c, "a.txt", b"x", repo="repo1")
    c.repositories_api.delete_repository("repo1")
    before = tree(root / "empty")
    r = create_repo_raw(c, "repo1", f"local://{root}/empty")
    assert r.status_code == 409 and "already holds" in r.json()["message"], r.text
    assert tree(root / "empty") == before
    assert [x.id for x in c.repositories_api.list_repositories().results] == ["repo2", "repo3"]


def test_bucket_namespaces_outside_the_configured_prefixes_are_refused(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text('[catalog]\ns3_namespace_prefixes = ["s3://lake/repos", "s3://scratch"]\n')
    server = start_server("--config", str(cfg))
    c = admin_client(server)
    for ns in ["s3://other/repos/x", "s3://lake/x", "s3://lake/reposx/y", "s3://lake"]:
        r = create_repo_raw(c, "repo1", ns)
        assert r.status_code == 400, (ns, r.status_code, r.text)
        message = r.json()["message"]
        assert ns in message and "s3://lake/repos, s3://scratch" in message, (ns, message)
    # '.', '..' and empty parts, which S3 takes literally and a prefix check would not.
    for ns in ["s3://lake/repos/../x", "s3://lake/repos//x", "s3://scratch/./x"]:
        r = create_repo_raw(c, "repo1", ns)
        assert r.status_code == 400 and ns in r.json()["message"], (ns, r.status_code, r.text)
    assert c.repositories_api.list_repositories().results == []



def test_a_namespace_holding_objects_is_refused_on_every_backend(lakefs):
    c = lakefs
    ns = c.namespace("taken")
    if ns.startswith("s3://"):
        from pyarrow import fs
        s3 = fs.S3FileSystem(access_key=os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"],
                             secret_key=os.environ["SEDIMENT_TEST_S3_SECRET_KEY"], scheme="http",
                             endpoint_override=os.environ["SEDIMENT_TEST_S3_ENDPOINT"])
        with s3.open_output_stream(ns[len("s3://"):] + "/theirs/report.csv") as f:
            f.write(b"a,b\n")

        def listing():
            infos = s3.get_file_info(fs.FileSelector(ns[len("s3://"):], recursive=True))
            return sorted(i.path for i in infos if i.type == fs.FileType.File)
    else:
        root = Path(ns[len("local://"):])
        (root / "theirs").mkdir(parents=True)
        (root / "theirs" / "report.csv").write_text("a,b\n")

        def listing():
            return tree(root)
    before = listing()
    r = create_repo_raw(c, "taken", ns)
    assert r.status_code == 409 and "theirs/report.csv" in r.json()["message"], r.text
    assert listing() == before, "nothing written into someone else's namespace"
    assert c.repositories_api.list_repositories().results == []
    make_repo(c, "fresh")  # an empty namespace next to it is fine
    if ns.startswith("s3://"):  # the fixture allows only the test's prefix
        r = create_repo_raw(c, "elsewhere", ns.rsplit("/", 2)[0] + "/elsewhere/x")
        assert r.status_code == 400 and "not under a prefix" in r.json()["message"], r.text

BAD_NAMESPACE_SETTINGS = [
    ("SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS", "relative/dir",
     'catalog.local_namespace_roots: "relative/dir" is not an absolute directory'),
    ("SEDIMENT_CATALOG_LOCAL_NAMESPACE_ROOTS", "/ok,,/also",
     "catalog.local_namespace_roots: an entry is empty"),
    ("SEDIMENT_CATALOG_S3_NAMESPACE_PREFIXES", "/srv/lake",
     'catalog.s3_namespace_prefixes: "/srv/lake" is not s3://bucket or s3://bucket/prefix'),
]


@pytest.mark.parametrize("name,value,expect", BAD_NAMESPACE_SETTINGS, ids=["relative", "empty-entry", "not-bucket"])
def test_bad_namespace_settings_stop_start_up(tmp_path, name, value, expect):
    from conftest import run_sediment
    data = tmp_path / "data"
    code, out = run_sediment("serve", "--listen", "127.0.0.1:0", "--data-dir", str(data), env={name: value})
    assert code == 2 and out == f"sediment: environment variable {name}: {expect}", out
    assert not data.exists()
    cfg = tmp_path / "sediment.toml"
    key = name.removeprefix("SEDIMENT_CATALOG_").lower()
    for text, problem in [(f"[catalog]\n{key} = \"/a\"\n", "must be a list of strings"),
                          (f"[catalog]\n{key} = [\"/a\", 5]\n", "must be a list of strings")]:
        cfg.write_text(text)
        code, out = run_sediment("serve", "--listen", "127.0.0.1:0", "--data-dir", str(data), "--config", str(cfg))
        assert code == 2 and f"sediment.toml:2: catalog.{key}: {problem}" in out and len(out.splitlines()) == 1, out
    assert not data.exists()


def test_garbage_collection_of_a_repository(lakefs):
    """POST .../gc: a dry run lists what nothing references, a real run deletes it, and every
    reachable object still reads back; bad parameters are a 400 that deletes nothing."""
    c = lakefs
    make_repo(c)
    auth = (ADMIN_KEY, ADMIN_SECRET)
    gc = c.server.url + "/api/v1/repositories/repo1/gc"
    upload(c, "kept/a", b"a")
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="one"))
    upload(c, "kept/b", b"b")
    upload(c, "discarded", b"never committed")
    c.branches_api.reset_branch("repo1", "main", m.ResetCreation(type="object", path="discarded"))
    r = requests.post(gc, params={"grace_seconds": "soon"}, auth=auth, timeout=30)
    assert r.status_code == 400 and "grace_seconds" in r.json()["message"], r.text
    dry = requests.post(gc, params={"dry_run": "true", "grace_seconds": 0}, auth=auth, timeout=30)
    assert dry.status_code == 200, dry.text
    assert dry.json()["dry_run"] is True and dry.json()["deleted"] >= 1, dry.json()
    young = requests.post(gc, auth=auth, timeout=30).json()  # default grace: 6 hours
    assert young["deleted"] == 0 and young["kept_young"] >= 1, young
    real = requests.post(gc, params={"grace_seconds": 0}, auth=auth, timeout=30).json()
    assert real["deleted"] == dry.json()["deleted"] and real["paths"] == dry.json()["paths"], (real, dry.json())
    for path, data in [("kept/a", b"a"), ("kept/b", b"b")]:
        assert c.objects_api.get_object("repo1", "main", path) == data
    assert c.objects_api.get_object("repo1", "main@", "kept/a") == b"a"
    assert requests.post(gc, params={"grace_seconds": 0}, auth=auth, timeout=30).json()["deleted"] == 0
    assert 'catalog_gc_runs_total{repository="repo1",outcome="completed"}' in requests.get(
        c.server.url + "/metrics", timeout=10).text


def test_auth_listings_page_through_the_sdk(lakefs):
    """Users, policies, credentials and a user's policies page with prefix/after/amount, as lakectl reads them."""
    c = lakefs
    for i in range(5):
        c.auth_api.create_user(m.UserCreation(id=f"pager{i}"))
        c.auth_api.create_policy(m.Policy(id=f"PagerPolicy{i}", statement=[
            m.Statement(effect="allow", action=["fs:ReadObject"], resource="*")]))
        c.auth_api.attach_policy_to_user("pager0", f"PagerPolicy{i}")
    for i in range(5):
        c.auth_api.create_credentials("pager1")

    def walk(call, *args, **kw):
        got, after = [], ""
        for _ in range(100):
            page = call(*args, after=after, amount=2, **kw)
            assert len(page.results) <= 2
            got += page.results
            if not page.pagination.has_more:
                return got
            after = page.pagination.next_offset
        raise AssertionError("paging does not end")

    assert [u.id for u in walk(c.auth_api.list_users, prefix="pager")] == [f"pager{i}" for i in range(5)]
    assert [p.id for p in walk(c.auth_api.list_policies, prefix="Pager")] == [f"PagerPolicy{i}" for i in range(5)]
    assert [p.id for p in walk(c.auth_api.list_user_policies, "pager0")] == [f"PagerPolicy{i}" for i in range(5)]
    assert len(walk(c.auth_api.list_user_credentials, "pager1")) == 5
    page = c.auth_api.list_users(prefix="pager", amount=3)
    assert [u.id for u in page.results] == ["pager0", "pager1", "pager2"] and page.pagination.has_more
    assert page.pagination.next_offset == "pager2"


def test_repository_metadata(lakefs):
    """lakeFS's repository metadata through its own SDK: set, read, delete; bad input refused with the
    stored pairs unchanged; callers without fs:UpdateRepository refused."""
    c = lakefs
    make_repo(c)
    api, internal = c.repositories_api, c.internal_api  # the SDK puts the changes in its internal API
    assert api.get_repository_metadata("repo1") == {}
    internal.set_repository_metadata("repo1", m.RepositoryMetadataSet(metadata={"owner": "data-eng", "tier": "gold"}))
    internal.set_repository_metadata("repo1", m.RepositoryMetadataSet(metadata={"tier": "silver"}))
    assert api.get_repository_metadata("repo1") == {"owner": "data-eng", "tier": "silver"}
    internal.delete_repository_metadata("repo1", m.RepositoryMetadataKeys(keys=["tier", "absent"]))
    assert api.get_repository_metadata("repo1") == {"owner": "data-eng"}
    url, auth = c.server.url + "/api/v1/repositories/repo1/metadata", (ADMIN_KEY, ADMIN_SECRET)
    for body, words in [({"metadata": {"n": 1}}, "must be a string"), ({"metadata": {"": "x"}}, "must have 1 to"),
                        ({"metadata": {"k" * 300: "x"}}, "must have 1 to"), ({"metadata": "x"}, "must be an object"),
                        ({"metadata": {"big": "v" * 5000}}, "more than 4096"), ({}, "metadata")]:
        r = requests.post(url, json=body, auth=auth, timeout=10)
        assert r.status_code == 400 and words in r.json()["message"], (body, r.text)
    assert api.get_repository_metadata("repo1") == {"owner": "data-eng"}, "a refused change changes nothing"
    assert status_of(api.get_repository_metadata, "nope") == 404
    c.auth_api.create_user(m.UserCreation(id="viewer"))
    creds = c.auth_api.create_credentials("viewer")
    c.auth_api.add_group_membership("Viewers", "viewer")
    viewer = client_for(c.server.url, creds.access_key_id, creds.secret_access_key)
    assert viewer.repositories_api.get_repository_metadata("repo1") == {"owner": "data-eng"}
    assert status_of(viewer.internal_api.set_repository_metadata, "repo1",
                     m.RepositoryMetadataSet(metadata={"owner": "me"})) == 401
    assert api.get_repository_metadata("repo1") == {"owner": "data-eng"}


def import_source(c, tmp_path, files):
    """Writes `files` ({relative path: bytes}) where an import may read them: a directory under the
    local namespace root, or a prefix of the test bucket next to the repositories. Returns its URI
    (ending in '/') and a function telling whether one of them is still stored."""
    ns = c.namespace("x")
    if ns.startswith("s3://"):
        import boto3
        bucket, _, base = ns.removeprefix("s3://").partition("/")
        prefix = base.rsplit("/", 1)[0] + "/import-src/"
        s3 = boto3.client("s3", endpoint_url="http://" + os.environ["SEDIMENT_TEST_S3_ENDPOINT"],
                          aws_access_key_id=os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"],
                          aws_secret_access_key=os.environ["SEDIMENT_TEST_S3_SECRET_KEY"], region_name="us-east-1")
        for path, data in files.items():
            s3.put_object(Bucket=bucket, Key=prefix + path, Body=data)

        def stored(path):
            return s3.list_objects_v2(Bucket=bucket, Prefix=prefix + path)["KeyCount"] == 1
        return f"s3://{bucket}/{prefix}", stored
    root = tmp_path / "import-src"
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return f"local://{root}/", lambda path: (root / path).exists()


def run_import(c, body, branch="main", timeout=30):
    url = f"{c.server.url}/api/v1/repositories/repo1/branches/{branch}/import"
    auth = (ADMIN_KEY, ADMIN_SECRET)
    r = requests.post(url, json=body, auth=auth, timeout=10)
    assert r.status_code == 202, r.text
    iid = r.json()["id"]
    status = {}

    def done():
        status.update(requests.get(url, params={"id": iid}, auth=auth, timeout=10).json())
        return status.get("completed") or status.get("error")
    eventually(done, timeout=timeout, what="the import to end")
    return iid, status


def test_import_brings_objects_under_version_control_without_copying(lakefs, tmp_path):
    """lakeFS's import: the destination prefix becomes the source's objects in one commit (what it
    held before is replaced), the objects are read where they are, GC never deletes them, and a
    finished import cannot be cancelled."""
    c = lakefs
    make_repo(c)
    files = {"a.csv": b"1,2", "dir/b.csv": b"3,4", "dir/c.csv": b"5"}
    src, stored = import_source(c, tmp_path, files)
    if src.startswith("local://"):  # what a walk of a directory leaves out
        root = Path(src.removeprefix("local://"))
        (root / ".hidden").write_bytes(b"h")
        (root / ".git").mkdir()
        (root / ".git" / "x").write_bytes(b"x")
        (root / "escape").symlink_to("/etc/hostname")
    upload(c, "imported/stale", b"old")
    upload(c, "other/keep", b"k")
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="before"))
    iid, status = run_import(c, {"paths": [{"type": "common_prefix", "path": src, "destination": "imported"}],
                                 "commit": {"message": "import one", "metadata": {"by": "test"}}})
    assert status["completed"] and "error" not in status, status
    assert status["ingested_objects"] == 3
    commit = status["commit"]
    assert commit["message"] == "import one" and commit["committer"] == "admin"
    assert commit["metadata"] == {"by": "test", ".lakefs.merge.strategy": "source-wins"}
    assert c.branches_api.get_branch("repo1", "main").commit_id == commit["id"]
    listed = [o.path for o in c.objects_api.list_objects("repo1", "main").results]
    assert listed == ["imported/a.csv", "imported/dir/b.csv", "imported/dir/c.csv", "other/keep"], listed
    for path, data in files.items():
        assert c.objects_api.get_object("repo1", "main", "imported/" + path) == data
    st = c.objects_api.stat_object("repo1", "main", "imported/dir/b.csv")
    assert st.physical_address == src + "dir/b.csv" and st.size_bytes == 3
    meta = c.repositories_api.get_repository_metadata("repo1")
    assert meta[".lakefs.last.import.timestamp"] == str(commit["creation_date"])

    # One object to an exact path: that path alone is replaced.
    upload(c, "single/a.bak", b"kept")
    upload(c, "single/a", b"old")
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="before one"))
    _, one = run_import(c, {"paths": [{"type": "object", "path": src + "a.csv", "destination": "single/a"}],
                            "commit": {"message": ""}})
    assert one["commit"]["message"] == "Import objects" and one["ingested_objects"] == 1
    assert c.objects_api.get_object("repo1", "main", "single/a") == b"1,2"
    assert c.objects_api.get_object("repo1", "main", "single/a.bak") == b"kept"

    # Zero-copy: deleting the imported objects and collecting garbage leaves the sources alone.
    c.objects_api.delete_objects("repo1", "main", m.PathList(paths=["imported/a.csv", "imported/dir/b.csv"]))
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="drop two"))
    gc = requests.post(c.server.url + "/api/v1/repositories/repo1/gc", params={"grace_seconds": 0},
                       auth=(ADMIN_KEY, ADMIN_SECRET), timeout=60)
    assert gc.status_code == 200, gc.text
    assert all(stored(p) for p in files), "GC deleted an imported object"
    url = f"{c.server.url}/api/v1/repositories/repo1/branches/main/import"
    auth = (ADMIN_KEY, ADMIN_SECRET)
    r = requests.delete(url, params={"id": iid}, auth=auth, timeout=10)
    assert r.status_code == 409 and "completed" in r.json()["message"]
    assert requests.get(url, params={"id": "nope0123"}, auth=auth, timeout=10).status_code == 404
    r = requests.get(url, params={"id": "../x"}, auth=auth, timeout=10)
    assert r.status_code == 400 and "not an import id" in r.json()["message"]


def test_an_import_runs_the_commit_hooks_and_a_failing_one_stops_it(lakefs, tmp_path):
    """An import is a commit: its branch's pre-commit hooks run before the branch moves (a failure
    fails the import with the hook's message and leaves the branch as it was) and post-commit after."""
    c = lakefs
    make_repo(c)
    src, _ = import_source(c, tmp_path, {"a.csv": b"1"})
    action = ("name: Guard imports\non: {pre-commit: , post-commit: }\nhooks:\n"
              "  - id: guard\n    type: lua\n    properties:\n      script: |\n"
              "        if action.event_type == 'pre-commit' and action.commit.message == 'blocked' then\n"
              "          error('imports named blocked are refused')\n        end\n"
              "        print(action.event_type, action.commit_id)\n")
    upload(c, "_lakefs_actions/guard.yaml", action.encode())
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="actions"))
    head = c.branches_api.get_branch("repo1", "main").commit_id
    body = {"paths": [{"type": "common_prefix", "path": src, "destination": "in/"}], "commit": {"message": "blocked"}}
    _, status = run_import(c, body)
    assert not status.get("completed") and "imports named blocked are refused" in status["error"]["message"], status
    assert c.branches_api.get_branch("repo1", "main").commit_id == head
    body["commit"]["message"] = "fine"
    _, status = run_import(c, body)
    assert status["completed"], status
    made = status["commit"]["id"]
    auth = (ADMIN_KEY, ADMIN_SECRET)

    def both_runs():
        r = requests.get(f"{c.server.url}/api/v1/repositories/repo1/actions/runs", params={"commit": made},
                         auth=auth, timeout=10)
        return sorted(x["event_type"] for x in r.json()["results"]) == ["post-commit", "pre-commit"]
    eventually(both_runs, timeout=20, what="the import's pre- and post-commit runs")


def test_imports_outside_the_rules_are_refused(lakefs, tmp_path):
    """Sources inside the repository's own namespace or outside the namespace rules, bad types and
    destinations are refused with what was wrong, before anything runs; a source that turns out
    missing fails the import; a user without fs:ImportFromStorage is refused; the branch never moves."""
    c = lakefs
    make_repo(c)
    upload(c, "a", b"1")
    c.commits_api.commit("repo1", "main", m.CommitCreation(message="one"))
    head = c.branches_api.get_branch("repo1", "main").commit_id
    ns = c.repositories_api.get_repository("repo1").storage_namespace
    src, _ = import_source(c, tmp_path, {"f": b"x"})
    outside = "local:///etc/" if src.startswith("local://") else "s3://some-other-bucket/data/"
    url = f"{c.server.url}/api/v1/repositories/repo1/branches/main/import"
    auth = (ADMIN_KEY, ADMIN_SECRET)
    cases = [
        ({"type": "common_prefix", "path": ns, "destination": "x/"}, "invalid import source"),
        ({"type": "common_prefix", "path": ns + "/data/", "destination": "x/"}, "invalid import source"),
        ({"type": "common_prefix", "path": ns[:-2], "destination": "x/"}, "invalid import source"),
        ({"type": "common_prefix", "path": outside, "destination": "x/"}, "import source"),
        ({"type": "folder", "path": src, "destination": "x/"}, "invalid import type"),
        ({"type": "object", "path": src + "f", "destination": ""}, "import destination"),
    ]
    make_repo(c, "repo2")
    if ns.startswith("s3://"):  # a key prefix as written reaches every key that starts with it
        cases.append(({"type": "common_prefix", "path": c.namespace("repo2")[:-1], "destination": "x/"},
                      "invalid import source"))
    for location, words in cases:
        r = requests.post(url, json={"paths": [location], "commit": {"message": "m"}}, auth=auth, timeout=10)
        assert r.status_code == 400 and words in r.json()["message"], (location, r.status_code, r.text)
    r = requests.post(url, json={"paths": [{"type": "common_prefix", "path": src, "destination": "x/"}]},
                      auth=auth, timeout=10)
    assert r.status_code == 400 and "commit" in r.json()["message"]
    _, status = run_import(c, {"paths": [{"type": "common_prefix", "path": src + "missing/", "destination": "x/"}],
                               "commit": {"message": "m"}})
    if src.startswith("local://"):
        assert not status.get("completed") and "no such directory" in status["error"]["message"], status
    else:  # an S3 prefix that holds nothing imports nothing: the prefix is emptied
        assert status["completed"] and status["ingested_objects"] == 0, status
        head = status["commit"]["id"]
    c.auth_api.create_user(m.UserCreation(id="writer"))
    creds = c.auth_api.create_credentials("writer")
    c.auth_api.add_group_membership("Developers", "writer")
    r = requests.post(url, json={"paths": [{"type": "common_prefix", "path": src, "destination": "x/"}],
                                 "commit": {"message": "m"}}, auth=(creds.access_key_id, creds.secret_access_key),
                      timeout=10)
    assert r.status_code == 401 and "fs:ImportFromStorage" in r.json()["message"], r.text
    # A protected branch takes no import.
    assert requests.put(c.server.url + "/api/v1/repositories/repo1/settings/branch_protection",
                        json=[{"pattern": "main"}], auth=auth, timeout=10).status_code == 204
    r = requests.post(url, json={"paths": [{"type": "common_prefix", "path": src, "destination": "x/"}],
                                 "commit": {"message": "m"}}, auth=auth, timeout=10)
    assert r.status_code == 403 and "protected branch" in r.json()["message"], r.text
    assert c.branches_api.get_branch("repo1", "main").commit_id == head


def test_committed_metadata_is_served_in_lakefs_form(lakefs):
    """GET .../metadata/object/{meta_range|range}/{id}: SST files as lakeFS stores them (their records
    are checked in src/catalog/lakefs_sstable_test.cc, and pebble reads them in lakeFS's own
    TestDownloadMetadataObject); with presign=true on S3 a redirect to a copy on the object store."""
    c = lakefs
    make_repo(c)
    upload(c, "a.csv", b"1")
    commit = c.commits_api.commit("repo1", "main", m.CommitCreation(message="one"))
    auth = (ADMIN_KEY, ADMIN_SECRET)
    base = f"{c.server.url}/api/v1/repositories/repo1/metadata/object"
    r = requests.get(f"{base}/meta_range/{commit.meta_range_id}", auth=auth, timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/octet-stream", r.text
    assert r.content.endswith(bytes.fromhex("f7cff485b741e288")) and b"a.csv" in r.content
    for url, code in [(f"{base}/tree/{commit.meta_range_id}", 400), (f"{base}/range/not-an-id", 400),
                      (f"{base}/range/{'0' * 64}", 404), (f"{base}/range/{commit.meta_range_id}", 404)]:
        r = requests.get(url, auth=auth, timeout=10)
        assert r.status_code == code, (url, r.text)
    presigned = requests.get(f"{base}/meta_range/{commit.meta_range_id}", params={"presign": "true"}, auth=auth,
                             timeout=10, allow_redirects=False)
    if not c.namespace("x").startswith("s3://"):
        assert presigned.status_code == 501, presigned.text
    else:
        assert presigned.status_code == 302, presigned.text
        # The same records (an SST file made again differs in its creation time and session id only).
        direct = requests.get(f"{base}/meta_range/{commit.meta_range_id}", auth=auth, timeout=10).content
        kept = requests.get(presigned.headers["Location"], timeout=10).content
        assert len(kept) == len(direct) and b"a.csv" in kept and kept[-8:] == direct[-8:]
    # It lists every object's path: fs:ListObjects and fs:ReadRepository, as lakeFS asks.
    reader = requests.post(f"{c.server.url}/api/v1/auth/users", json={"id": "reader"}, auth=auth, timeout=10)
    assert reader.status_code == 201, reader.text
    creds = requests.post(f"{c.server.url}/api/v1/auth/users/reader/credentials", auth=auth, timeout=10).json()
    r = requests.get(f"{base}/meta_range/{commit.meta_range_id}", timeout=10,
                     auth=(creds["access_key_id"], creds["secret_access_key"]))
    assert r.status_code == 401 and b"a.csv" not in r.content, r.text
    if c.namespace("x").startswith("s3://"):
        # A kept copy is served only while the range file it was made from is there.
        import pyarrow.fs as pafs
        fsys = pafs.S3FileSystem(access_key=os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"],
                                 secret_key=os.environ["SEDIMENT_TEST_S3_SECRET_KEY"],
                                 endpoint_override=os.environ["SEDIMENT_TEST_S3_ENDPOINT"], scheme="http")
        ns = c.repositories_api.get_repository("repo1").storage_namespace[len("s3://"):]
        fsys.delete_file(f"{ns}/_lakefs/{commit.meta_range_id}")
        r = requests.get(f"{base}/meta_range/{commit.meta_range_id}", params={"presign": "true"}, auth=auth,
                         timeout=10, allow_redirects=False)
        assert r.status_code == 404, r.text
        r = requests.get(f"{base}/meta_range/{'z' * 64}", params={"presign": "true"}, auth=auth, timeout=10,
                         allow_redirects=False)
        assert r.status_code == 400, r.text


def test_presigned_multipart_uploads_assemble_parts_the_client_sends(lakefs):
    """lakeFS's presigned multipart API (.../staging/pmpu): on S3 storage the client PUTs parts to
    presigned URLs (or has the server copy a range of an object it may read), and completing stages the
    object with the completion's ETag as checksum and its stored size; an address is good for its own
    path once; abort drops the parts. On local storage: 501 and the storage config says so."""
    c = lakefs
    make_repo(c)
    auth = (ADMIN_KEY, ADMIN_SECRET)
    pmpu = f"{c.server.url}/api/v1/repositories/repo1/branches/main/staging/pmpu"
    config = requests.get(f"{c.server.url}/api/v1/config/storage", auth=auth, timeout=10).json()
    r = requests.post(pmpu, params={"path": "big/a", "parts": 2}, auth=auth, timeout=10)
    if not c.namespace("x").startswith("s3://"):
        assert config["pre_sign_multipart_upload"] is False
        assert r.status_code == 501 and "S3" in r.json()["message"], r.text
        return
    assert config["pre_sign_multipart_upload"] is True
    assert r.status_code == 201, r.text
    created = r.json()
    assert len(created["presigned_urls"]) == 2 and created["physical_address"].startswith(c.namespace("repo1"))
    upload(c, "src/big", bytes(range(256)) * (6 * 4096))  # 6 MiB
    first = requests.put(created["presigned_urls"][0], data=b"a" * (5 << 20), timeout=30)
    assert first.status_code == 200, first.text
    # Part 2 is copied by the object store: bytes 10..99 of src/big.
    copy = requests.put(f"{pmpu}/{created['upload_id']}/parts/2/copy", params={"path": "big/a"}, auth=auth, timeout=30,
                        json={"physical_address": created["physical_address"],
                              "copy_source": {"repository": "repo1", "ref": "main", "path": "src/big",
                                              "range": "bytes=10-99"}})
    assert copy.status_code == 204 and copy.headers["ETag"], copy.text
    parts = [{"part_number": 1, "etag": first.headers["ETag"]}, {"part_number": 2, "etag": copy.headers["ETag"]}]
    body = {"physical_address": created["physical_address"], "parts": parts, "user_metadata": {"foo": "bar"},
            "content_type": "text/plain"}
    # Another path, or an address the server did not issue: refused, nothing staged.
    for path, address in [("big/b", created["physical_address"]),
                          ("big/a", created["physical_address"].replace("/data/", "/data/x"))]:
        r = requests.put(f"{pmpu}/{created['upload_id']}", params={"path": path}, auth=auth, timeout=30,
                         json=dict(body, physical_address=address))
        assert r.status_code == 400, r.text
    r = requests.put(f"{pmpu}/{created['upload_id']}", params={"path": "big/a"}, auth=auth, timeout=30, json=body)
    assert r.status_code == 200, r.text
    done = r.json()
    assert done["size_bytes"] == (5 << 20) + 90 and done["checksum"].endswith("-2")
    assert done["metadata"] == {"foo": "bar"} and done["content_type"] == "text/plain"
    st = c.objects_api.stat_object("repo1", "main", "big/a")
    assert st.checksum == done["checksum"] and st.size_bytes == done["size_bytes"]
    assert c.objects_api.get_object("repo1", "main", "big/a") == b"a" * (5 << 20) + bytes(range(10, 100))
    # Completed once: the address is used up.
    r = requests.put(f"{pmpu}/{created['upload_id']}", params={"path": "big/a"}, auth=auth, timeout=30, json=body)
    assert r.status_code == 400, r.text

    # Parts presigned one at a time; then an abort, after which completing finds no upload.
    r = requests.post(pmpu, params={"path": "big/c"}, auth=auth, timeout=10)
    assert r.status_code == 201 and "presigned_urls" not in r.json(), r.text
    second = r.json()
    part = requests.put(f"{pmpu}/{second['upload_id']}/parts/1", params={"path": "big/c"}, auth=auth, timeout=10,
                        json={"physical_address": second["physical_address"]})
    assert part.status_code == 200, part.text
    sent = requests.put(part.json()["presigned_url"], data=b"small", timeout=10)
    assert sent.status_code == 200
    r = requests.delete(f"{pmpu}/{second['upload_id']}", params={"path": "big/c"}, auth=auth, timeout=10,
                        json={"physical_address": second["physical_address"]})
    assert r.status_code == 204, r.text
    r = requests.put(f"{pmpu}/{second['upload_id']}", params={"path": "big/c"}, auth=auth, timeout=10,
                     json={"physical_address": second["physical_address"],
                           "parts": [{"part_number": 1, "etag": sent.headers["ETag"]}]})
    assert r.status_code == 404 and "NoSuchUpload" in r.json()["message"], r.text
    assert requests.get(f"{c.server.url}/api/v1/repositories/repo1/refs/main/objects/stat", params={"path": "big/c"},
                        auth=auth, timeout=10).status_code == 404
    # Bad input: a part number, a parts count, a copy range.
    for method, url, params, js in [
            ("POST", pmpu, {"path": "big/d", "parts": -1}, None),
            ("POST", pmpu, {"path": "big/d", "parts": 10001}, None),
            ("POST", pmpu, {"path": ""}, None),
            ("PUT", f"{pmpu}/x/parts/0", {"path": "big/d"}, {"physical_address": "s3://b/data/x"}),
            ("PUT", f"{pmpu}/x/parts/1/copy", {"path": "big/d"}, {"physical_address": "s3://b/data/x"})]:
        r = requests.request(method, url, params=params, json=js, auth=auth, timeout=10)
        assert r.status_code == 400, (url, params, r.text)
    third = requests.post(pmpu, params={"path": "big/e"}, auth=auth, timeout=10).json()
    r = requests.put(f"{pmpu}/{third['upload_id']}/parts/1/copy", params={"path": "big/e"}, auth=auth, timeout=10,
                     json={"physical_address": third["physical_address"],
                           "copy_source": {"repository": "repo1", "ref": "main", "path": "src/big",
                                           "range": "bytes=5-4"}})
    assert r.status_code == 400 and "range" in r.json()["message"], r.text


def test_presigned_urls_read_the_object_store_directly(lakefs):
    """stat and get with presign=true: on S3 storage a URL that reads the object from the object store
    itself (signature V4 in the query, 15 minutes), which a tampered signature does not; on local
    storage a clear 501."""
    c = lakefs
    make_repo(c)
    upload(c, "data/a.csv", b"1,2,3")
    url = f"{c.server.url}/api/v1/repositories/repo1/refs/main/objects"
    auth = (ADMIN_KEY, ADMIN_SECRET)
    st = requests.get(url + "/stat", params={"path": "data/a.csv", "presign": "true"}, auth=auth, timeout=10)
    got = requests.get(url, params={"path": "data/a.csv", "presign": "true"}, auth=auth, timeout=10,
                       allow_redirects=False)
    if not c.namespace("x").startswith("s3://"):
        assert st.status_code == 501 and "S3 storage" in st.json()["message"], st.text
        assert got.status_code == 501
        r = requests.get(url + "/ls", params={"presign": "true"}, auth=auth, timeout=10)
        assert r.status_code == 501, r.text
        config = requests.get(f"{c.server.url}/api/v1/config/storage", auth=auth, timeout=10).json()
        assert config["pre_sign_support"] is False
        return
    assert st.status_code == 200, st.text
    signed = st.json()["physical_address"]
    assert signed.startswith("http") and "X-Amz-Signature=" in signed and st.json()["physical_address_expiry"] > 0
    assert requests.get(signed, timeout=10).content == b"1,2,3"
    assert requests.get(signed[:-4] + "0000", timeout=10).status_code == 403, "a tampered signature reads nothing"
    assert got.status_code == 302 and requests.get(got.headers["Location"], timeout=10).content == b"1,2,3"
    # A listing with presign=true: every object's address is such a URL; the server says it offers them.
    listed = requests.get(url + "/ls", params={"presign": "true"}, auth=auth, timeout=10).json()["results"]
    assert [o["path"] for o in listed] == ["data/a.csv"] and listed[0]["physical_address_expiry"] > 0
    assert requests.get(listed[0]["physical_address"], timeout=10).content == b"1,2,3"
    config = requests.get(f"{c.server.url}/api/v1/config/storage", auth=auth, timeout=10).json()
    assert config["pre_sign_support"] is True
    # An upload straight to the object store, then linked.
    backing = f"{c.server.url}/api/v1/repositories/repo1/branches/main/staging/backing"
    addr = requests.get(backing, params={"path": "data/b.csv", "presign": "true"}, auth=auth, timeout=10).json()
    assert requests.put(addr["presigned_url"], data=b"4,5", timeout=10).status_code == 200
    r = requests.put(backing, params={"path": "data/b.csv"}, auth=auth, timeout=10,
                     json={"staging": {"physical_address": addr["physical_address"]}, "checksum": "", "size_bytes": 3})
    assert r.status_code == 200, r.text
    assert c.objects_api.get_object("repo1", "main", "data/b.csv") == b"4,5"
