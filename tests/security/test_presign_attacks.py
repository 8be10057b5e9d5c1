"""Attacks through presigned URLs (S3 storage): a presigned URL reads or writes the object store with no
further check, so the server hands one out only for what the caller may do itself. A listing with
presign=true needs fs:ReadObject on every object it lists; stat and get need it on theirs."""
import os
import uuid

import pytest
import requests

from conftest import s3_settings
from security.util import ADMIN, Api, create_branch, create_repo, create_user, set_up_admin, upload

SECRET = b"the secret bytes"


@pytest.fixture
def s3_victim(start_server, tmp_path):
    prefix = f"presign-{uuid.uuid4().hex[:10]}"
    settings = s3_settings(prefix)
    if settings is None:
        pytest.skip("no S3 configured (scripts/test.sh starts MinIO)")
    base = f"s3://{os.environ['SEDIMENT_TEST_S3_BUCKET']}/{prefix}"
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(settings + f'[catalog]\ns3_namespace_prefixes = ["{base}"]\n')
    server = start_server("--config", str(cfg))
    set_up_admin(server)
    api = Api(server)
    create_repo(api, "lake", f"{base}/ns-lake")
    assert upload(api, "lake", "main", "secret/x", SECRET).status_code == 201
    assert upload(api, "lake", "main", "public/a", b"public").status_code == 201
    bob = api.as_user(create_user(api, "bob", [
        {"effect": "allow", "action": ["fs:ListObjects"], "resource": "arn:lakefs:fs:::repository/lake"},
        {"effect": "allow", "action": ["fs:ReadObject"], "resource": "arn:lakefs:fs:::repository/lake/object/public/*"},
    ]))
    return api, bob


def test_a_presigned_listing_needs_read_on_every_object_it_lists(s3_victim):
    api, bob = s3_victim
    ls = "/repositories/lake/refs/main/objects/ls"
    r = bob("GET", ls, params={"presign": "true"})
    assert r.status_code == 401 and "insufficient permissions" in r.json()["message"], r.text
    assert SECRET not in r.content
    # Without presign bob lists what he may list (addresses, no access).
    assert sorted(o["path"] for o in bob("GET", ls).json()["results"]) == ["public/a", "secret/x"]
    # Under the prefix he may read, the URLs work.
    r = bob("GET", ls, params={"presign": "true", "prefix": "public/"})
    assert r.status_code == 200, r.text
    [obj] = r.json()["results"]
    assert requests.get(obj["physical_address"], timeout=10).content == b"public"
    # Common prefixes carry no URL and need nothing.
    r = bob("GET", ls, params={"presign": "true", "delimiter": "/"})
    assert r.status_code == 200 and {o["path_type"] for o in r.json()["results"]} == {"common_prefix"}, r.text


def test_presigned_stat_and_get_need_read_on_the_object(s3_victim):
    api, bob = s3_victim
    for path in ["/repositories/lake/refs/main/objects/stat", "/repositories/lake/refs/main/objects"]:
        r = bob("GET", path, params={"path": "secret/x", "presign": "true"}, allow_redirects=False)
        assert r.status_code == 401 and SECRET not in r.content, (path, r.text)
        assert "Location" not in r.headers
    r = api("GET", "/repositories/lake/refs/main/objects/stat", params={"path": "secret/x", "presign": "true"})
    assert requests.get(r.json()["physical_address"], timeout=10).content == SECRET


PMPU = "/repositories/lake/branches/main/staging/pmpu"


def stat_status(api, path):
    return api("GET", "/repositories/lake/refs/main/objects/stat", params={"path": path}).status_code


def test_presigned_multipart_uploads_write_only_where_the_caller_may_and_copy_only_what_it_may_read(s3_victim):
    """A presigned part URL writes the object store with no further check, and a part copy reads an object
    on the server's say: create needs fs:WriteObject on the path, a copy fs:ReadObject on its source, and
    an upload's address completes only the path and branch it was created for, once."""
    api, bob = s3_victim
    wendy = api.as_user(create_user(api, "wendy", [
        {"effect": "allow", "action": ["fs:WriteObject"], "resource": "arn:lakefs:fs:::repository/lake/object/up/*"},
        {"effect": "allow", "action": ["fs:ReadObject"], "resource": "arn:lakefs:fs:::repository/lake/object/public/*"},
    ]))
    # No write permission: no upload, no URL.
    r = bob("POST", PMPU, params={"path": "public/big", "parts": 1})
    assert r.status_code == 401 and "presigned_urls" not in r.text, r.text
    r = wendy("POST", PMPU, params={"path": "secret/x", "parts": 1})
    assert r.status_code == 401, r.text
    # Unauthenticated, and with a wrong secret: 401 before anything is looked at.
    for auth in [None, (wendy.auth[0], "wrong")]:
        r = requests.post(api.server.url + "/api/v1" + PMPU, params={"path": "up/a", "parts": 1}, auth=auth, timeout=10)
        assert r.status_code == 401, r.text
    r = wendy("POST", PMPU, params={"path": "up/a"})
    assert r.status_code == 201, r.text
    up = r.json()
    target = f"{PMPU}/{up['upload_id']}"
    # A part copied from an object she may not read: refused, the secret never reaches the upload.
    r = wendy("PUT", f"{target}/parts/1/copy", params={"path": "up/a"},
              json={"physical_address": up["physical_address"],
                    "copy_source": {"repository": "lake", "ref": "main", "path": "secret/x"}})
    assert r.status_code == 401 and "ETag" not in r.headers, r.text
    r = wendy("PUT", f"{target}/parts/1/copy", params={"path": "up/a"},
              json={"physical_address": up["physical_address"],
                    "copy_source": {"repository": "lake", "ref": "main", "path": "public/a"}})
    assert r.status_code == 204, r.text
    part = {"part_number": 1, "etag": r.headers["ETag"]}
    # Her address completes her path on her branch only: not a path she may write elsewhere, not another
    # repository's object.
    create_branch(api, "lake", "dev")
    for url, path in [(target, "up/other"), (target.replace("/main/", "/dev/"), "up/a")]:
        r = wendy("PUT", url, params={"path": path}, json={"physical_address": up["physical_address"], "parts": [part]})
        assert r.status_code == 400, r.text
    r = wendy("PUT", target, params={"path": "up/a"}, json={"physical_address": up["physical_address"], "parts": [part]})
    assert r.status_code == 200, r.text
    assert wendy("GET", "/repositories/lake/refs/main/objects", params={"path": "up/a"}).status_code == 401
    assert api("GET", "/repositories/lake/refs/main/objects", params={"path": "up/a"}).content == b"public"
    # Once: a second completion or an abort of the used address is refused; nothing else was staged.
    r = wendy("PUT", target, params={"path": "up/a"}, json={"physical_address": up["physical_address"], "parts": [part]})
    assert r.status_code == 400, r.text
    assert stat_status(api, "up/other") == 404
    assert api("GET", "/repositories/lake/refs/dev/objects/stat", params={"path": "up/a"}).status_code == 404


def test_a_presigned_multipart_body_over_the_limit_is_refused_unread(s3_victim):
    api, _ = s3_victim
    up = api("POST", PMPU, params={"path": "up/big"}).json()
    parts = [{"part_number": 1 + i % 10000, "etag": "x" * 64} for i in range(20000)]  # about 1.5 MiB
    r = api("PUT", f"{PMPU}/{up['upload_id']}", params={"path": "up/big"},
            json={"physical_address": up["physical_address"], "parts": parts})
    assert r.status_code == 413, r.text
    assert stat_status(api, "up/big") == 404
