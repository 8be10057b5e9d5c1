"""Attacks through presigned URLs (S3 storage): a presigned URL reads or writes the object store with no
further check, so the server hands one out only for what the caller may do itself. A listing with
presign=true needs fs:ReadObject on every object it lists; stat and get need it on theirs."""
import os
import uuid

import pytest
import requests

from conftest import s3_settings
from security.util import ADMIN, Api, create_repo, create_user, set_up_admin, upload

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
