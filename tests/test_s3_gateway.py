"""The S3 gateway through real S3 clients (boto3, the AWS CLI), on local storage and on MinIO + PostgreSQL:
a bucket is a repository, a key is <ref>/<path>."""
import email.utils
import hashlib
import json
import os
import subprocess
import threading
import urllib.parse

import sys
from pathlib import Path

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import ADMIN_KEY, ADMIN_SECRET, eventually, set_up_admin

MIB = 1 << 20


@pytest.fixture
def gw(start_server, tmp_path, backend):
    cfg = tmp_path / "sediment.toml"
    base = backend.split('objects = "')[1].split('"')[0] if 'objects = "s3://' in backend else None
    settings = f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n'
    if base:
        settings += f's3_namespace_prefixes = ["{base}"]\n'
    cfg.write_text(backend + settings)
    server = start_server("--config", str(cfg))
    set_up_admin(server)
    server.namespace = (lambda n: f"{base}/{n}") if base else (lambda n: f"local://{tmp_path}/ns-{n}")
    server.api = lambda method, path, **kw: requests.request(method, server.url + "/api/v1" + path,
                                                            auth=(ADMIN_KEY, ADMIN_SECRET), timeout=60, **kw)
    make_repo(server, "repo1")
    return server


def make_repo(server, name, **extra):
    r = server.api("POST", "/repositories", json={"name": name, "storage_namespace": server.namespace(name),
                                                  "default_branch": "main", **extra})
    assert r.status_code == 201, r.text


def client(server, key=ADMIN_KEY, secret=ADMIN_SECRET, **cfg):
    return boto3.client("s3", endpoint_url=server.url, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **cfg))


def code_of(fn, *args, **kw):
    with pytest.raises(ClientError) as e:
        fn(*args, **kw)
    return e.value.response["Error"]["Code"]


def meta(reply):
    """User metadata, names lower-cased (the gateway sends them as lakeFS does: X-Amz-Meta-Name)."""
    return {k.lower(): v for k, v in reply["Metadata"].items()}


def keys_of(pages):
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def test_put_get_head_ranges_conditions_and_delete(gw):
    s3 = client(gw)
    body = os.urandom(100_000)
    put = s3.put_object(Bucket="repo1", Key="main/dir/a.bin", Body=body, ContentType="application/x-test",
                        Metadata={"owner": "ana"})
    etag = '"' + hashlib.md5(body).hexdigest() + '"'
    assert put["ETag"] == etag
    got = s3.get_object(Bucket="repo1", Key="main/dir/a.bin")
    assert got["Body"].read() == body and got["ETag"] == etag
    assert got["ContentType"] == "application/x-test" and meta(got) == {"owner": "ana"}
    assert got["ResponseMetadata"]["HTTPHeaders"]["content-security-policy"] == "sandbox"  # never a page of ours
    head = s3.head_object(Bucket="repo1", Key="main/dir/a.bin")
    assert head["ContentLength"] == len(body)
    # The lakeFS API sees the same object.
    stat = gw.api("GET", "/repositories/repo1/refs/main/objects/stat", params={"path": "dir/a.bin"}).json()
    assert stat["checksum"] == etag.strip('"') and stat["size_bytes"] == len(body)

    r = s3.get_object(Bucket="repo1", Key="main/dir/a.bin", Range="bytes=10-19")
    assert r["Body"].read() == body[10:20] and r["ContentRange"] == f"bytes 10-19/{len(body)}"
    assert s3.get_object(Bucket="repo1", Key="main/dir/a.bin", Range="bytes=-5")["Body"].read() == body[-5:]
    assert s3.get_object(Bucket="repo1", Key="main/dir/a.bin", Range="bytes=99990-")["Body"].read() == body[99990:]
    assert code_of(s3.get_object, Bucket="repo1", Key="main/dir/a.bin", Range="bytes=200000-") == "InvalidRange"

    assert code_of(s3.get_object, Bucket="repo1", Key="main/dir/a.bin", IfNoneMatch=etag) == "304"
    assert code_of(s3.get_object, Bucket="repo1", Key="main/dir/a.bin", IfMatch='"0000"') == "PreconditionFailed"
    assert s3.get_object(Bucket="repo1", Key="main/dir/a.bin", IfMatch=etag)["Body"].read() == body
    assert code_of(s3.put_object, Bucket="repo1", Key="main/dir/a.bin", Body=b"x", IfNoneMatch="*") \
        == "PreconditionFailed"

    assert code_of(s3.get_object, Bucket="repo1", Key="main/nope") == "NoSuchKey"
    assert code_of(s3.get_object, Bucket="nope", Key="main/x") == "NoSuchBucket"
    assert code_of(s3.head_object, Bucket="repo1", Key="main/nope") == "404"
    s3.delete_object(Bucket="repo1", Key="main/dir/a.bin")
    s3.delete_object(Bucket="repo1", Key="main/dir/a.bin")  # deleting what is gone succeeds
    assert code_of(s3.get_object, Bucket="repo1", Key="main/dir/a.bin") == "NoSuchKey"
    s3.head_bucket(Bucket="repo1")
    assert code_of(s3.head_bucket, Bucket="nope") == "404"
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["repo1"]


def test_listing_v1_v2_delimiters_paging_and_branches(gw):
    s3 = client(gw)
    keys = [f"main/d{i % 3}/f{i:03d}" for i in range(25)] + ["main/top.txt", "main/odd key+&<>.txt"]
    for k in keys:
        s3.put_object(Bucket="repo1", Key=k, Body=k.encode())
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket="repo1", Prefix="main/",
                                                              PaginationConfig={"PageSize": 7}))
    assert len(pages) == 4 and keys_of(pages) == sorted(keys)
    pages = list(s3.get_paginator("list_objects").paginate(Bucket="repo1", Prefix="main/",
                                                           PaginationConfig={"PageSize": 10}))
    assert keys_of(pages) == sorted(keys)
    r = s3.list_objects_v2(Bucket="repo1", Prefix="main/", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["main/d0/", "main/d1/", "main/d2/"]
    assert [o["Key"] for o in r["Contents"]] == ["main/odd key+&<>.txt", "main/top.txt"]
    assert r["Contents"][1]["ETag"] == '"' + hashlib.md5(b"main/top.txt").hexdigest() + '"'
    r = s3.list_objects_v2(Bucket="repo1", Prefix="main/d1/", StartAfter="main/d1/f010")
    assert [o["Key"] for o in r["Contents"]] == [k for k in sorted(keys) if k.startswith("main/d1/") and
                                                  k > "main/d1/f010"]
    # A prefix without a ref lists the branches.
    assert gw.api("POST", "/repositories/repo1/branches", json={"name": "dev", "source": "main"}).status_code == 201
    r = s3.list_objects_v2(Bucket="repo1", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dev/", "main/"]
    assert len(keys_of([s3.list_objects_v2(Bucket="repo1", Prefix="dev/")])) == 0  # dev forked before any commit
    assert code_of(s3.list_objects_v2, Bucket="repo1", Prefix="main/", MaxKeys=-1) in ("InvalidArgument",
                                                                                         "ParamValidation")
    # Listing with url encoding (as the AWS CLI asks for).
    r = s3.list_objects_v2(Bucket="repo1", Prefix="main/odd", EncodingType="url")
    assert [urllib.parse.unquote_plus(o["Key"]) for o in r["Contents"]] == ["main/odd key+&<>.txt"]


def test_delete_objects_reports_each_key(gw):
    s3 = client(gw)
    for k in ["main/a", "main/b"]:
        s3.put_object(Bucket="repo1", Key=k, Body=b"1")
    r = s3.delete_objects(Bucket="repo1", Delete={"Objects": [{"Key": "main/a"}, {"Key": "main/b"},
                                                              {"Key": "main/never"}, {"Key": "v1.0/x"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["main/a", "main/b", "main/never"]
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("v1.0/x", "NoSuchBucket")]
    assert keys_of([s3.list_objects_v2(Bucket="repo1", Prefix="main/")]) == []
    r = requests.post(gw.url + "/repositories/repo1?delete", data=b"<Delete><Object>", timeout=10)
    assert r.status_code in (400, 403)


def test_multipart_upload_part_copy_and_abort(gw):
    s3 = client(gw)
    src = os.urandom(6 * MIB)
    s3.put_object(Bucket="repo1", Key="main/src.bin", Body=src)
    up = s3.create_multipart_upload(Bucket="repo1", Key="main/big.bin", ContentType="application/x-big",
                                    Metadata={"k": "v"})
    uid = up["UploadId"]
    p1 = os.urandom(5 * MIB)
    e1 = s3.upload_part(Bucket="repo1", Key="main/big.bin", UploadId=uid, PartNumber=1, Body=p1)["ETag"]
    e2 = s3.upload_part_copy(Bucket="repo1", Key="main/big.bin", UploadId=uid, PartNumber=2,
                             CopySource="repo1/main/src.bin", CopySourceRange=f"bytes=0-{5 * MIB - 1}")
    e2 = e2["CopyPartResult"]["ETag"]
    p3 = b"tail" * 100
    e3 = s3.upload_part(Bucket="repo1", Key="main/big.bin", UploadId=uid, PartNumber=3, Body=p3)["ETag"]
    parts = s3.list_parts(Bucket="repo1", Key="main/big.bin", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in parts] == [(1, 5 * MIB), (2, 5 * MIB), (3, 400)]
    assert code_of(s3.get_object, Bucket="repo1", Key="main/big.bin") == "NoSuchKey"  # not visible yet
    done = s3.complete_multipart_upload(Bucket="repo1", Key="main/big.bin", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}, {"PartNumber": 3, "ETag": e3}]})
    md5s = b"".join(hashlib.md5(p).digest() for p in [p1, src[:5 * MIB], p3])
    assert done["ETag"] == f'"{hashlib.md5(md5s).hexdigest()}-3"'
    got = s3.get_object(Bucket="repo1", Key="main/big.bin")
    assert got["Body"].read() == p1 + src[:5 * MIB] + p3
    assert got["ContentType"] == "application/x-big" and meta(got) == {"k": "v"}
    assert code_of(s3.list_parts, Bucket="repo1", Key="main/big.bin", UploadId=uid) == "NoSuchUpload"
    # The object's mtime is its store's (as lakeFS reports it), not a second read from the server's clock.
    on_s3 = "s3://" in gw.namespace("x")
    st = gw.api("GET", "/repositories/repo1/refs/main/objects/stat", params={"path": "big.bin", "presign": on_s3})
    assert st.status_code == 200, st.text
    address = st.json()["physical_address"]
    if on_s3:
        stored = email.utils.parsedate_to_datetime(requests.get(address, timeout=60).headers["Last-Modified"])
        stored = stored.timestamp()
    else:
        stored = os.stat(urllib.parse.urlparse(address).path).st_mtime
    assert st.json()["mtime"] == int(stored), (address, stored)

    # Too-small parts, a wrong ETag, and an abort.
    uid = s3.create_multipart_upload(Bucket="repo1", Key="main/small.bin")["UploadId"]
    a = s3.upload_part(Bucket="repo1", Key="main/small.bin", UploadId=uid, PartNumber=1, Body=b"a")["ETag"]
    b = s3.upload_part(Bucket="repo1", Key="main/small.bin", UploadId=uid, PartNumber=2, Body=b"b")["ETag"]
    assert code_of(s3.complete_multipart_upload, Bucket="repo1", Key="main/small.bin", UploadId=uid,
                   MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": a}, {"PartNumber": 2, "ETag": b}]}) \
        == "EntityTooSmall"
    assert code_of(s3.complete_multipart_upload, Bucket="repo1", Key="main/small.bin", UploadId=uid,
                   MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"beef"'}]}) == "InvalidPart"
    s3.abort_multipart_upload(Bucket="repo1", Key="main/small.bin", UploadId=uid)
    assert code_of(s3.abort_multipart_upload, Bucket="repo1", Key="main/small.bin", UploadId=uid) == "NoSuchUpload"
    assert code_of(s3.get_object, Bucket="repo1", Key="main/small.bin") == "NoSuchKey"


def test_racing_completions_of_one_key_leave_no_orphan_files(gw, tmp_path):
    """Two uploads of one key completed at once with If-None-Match: *: one publishes, the other gets 412,
    and the loser's parts and assembled object are deleted with its upload (whichever step it lost at)."""
    if "s3://" in gw.namespace("x"):
        pytest.skip("counts the namespace's files on local storage")
    s3 = client(gw)
    ns = tmp_path / "ns-repo1"
    before = {p for p in ns.rglob("*") if p.is_file()}
    uploads = []
    for n in range(2):
        uid = s3.create_multipart_upload(Bucket="repo1", Key="main/race.bin")["UploadId"]
        parts = [os.urandom(8 * MIB), bytes([n]) * 100]
        etags = [s3.upload_part(Bucket="repo1", Key="main/race.bin", UploadId=uid, PartNumber=i + 1,
                                Body=b)["ETag"] for i, b in enumerate(parts)]
        uploads.append((uid, etags, b"".join(parts)))
    barrier, results = threading.Barrier(2), [None, None]

    def complete(n):
        uid, etags, _ = uploads[n]
        c = client(gw)
        barrier.wait()
        try:
            c.complete_multipart_upload(Bucket="repo1", Key="main/race.bin", UploadId=uid, IfNoneMatch="*",
                                        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e}
                                                                   for i, e in enumerate(etags)]})
            results[n] = "done"
        except ClientError as e:
            results[n] = e.response["Error"]["Code"]

    threads = [threading.Thread(target=complete, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["PreconditionFailed", "done"], results
    winner = results.index("done")
    assert s3.get_object(Bucket="repo1", Key="main/race.bin")["Body"].read() == uploads[winner][2]
    loser_uid = uploads[1 - winner][0]
    try:  # a loser refused before it assembled anything keeps its upload, as S3 does: the client aborts it
        s3.abort_multipart_upload(Bucket="repo1", Key="main/race.bin", UploadId=loser_uid)
    except ClientError as e:
        assert e.response["Error"]["Code"] == "NoSuchUpload", e.response
    st = gw.api("GET", "/repositories/repo1/refs/main/objects/stat", params={"path": "race.bin"}).json()
    live = Path(urllib.parse.urlparse(st["physical_address"]).path)
    after = {p for p in ns.rglob("*") if p.is_file()}
    assert after - before == {live}, sorted(map(str, after - before))


def test_copy_within_and_across_branches_and_repositories(gw):
    s3 = client(gw)
    s3.put_object(Bucket="repo1", Key="main/a.txt", Body=b"hello", Metadata={"m": "1"})
    assert gw.api("POST", "/repositories/repo1/branches", json={"name": "dev", "source": "main"}).status_code == 201
    s3.copy_object(Bucket="repo1", Key="main/b.txt", CopySource="repo1/main/a.txt")
    s3.copy_object(Bucket="repo1", Key="dev/c.txt", CopySource={"Bucket": "repo1", "Key": "main/a.txt"})
    make_repo(gw, "repo2")
    s3.copy_object(Bucket="repo2", Key="main/d.txt", CopySource="repo1/main/a.txt", MetadataDirective="REPLACE",
                   Metadata={"m": "2"})
    for bucket, key, m in [("repo1", "main/b.txt", "1"), ("repo1", "dev/c.txt", "1"), ("repo2", "main/d.txt", "2")]:
        got = s3.get_object(Bucket=bucket, Key=key)
        assert got["Body"].read() == b"hello" and meta(got) == {"m": m}, key
    # Deleting the source leaves the copies whole.
    s3.delete_object(Bucket="repo1", Key="main/a.txt")
    assert s3.get_object(Bucket="repo2", Key="main/d.txt")["Body"].read() == b"hello"
    assert code_of(s3.copy_object, Bucket="repo1", Key="main/e.txt", CopySource="repo1/main/a.txt") == "NoSuchKey"


def test_writes_to_tags_commits_and_read_only_repositories_are_refused(gw):
    s3 = client(gw)
    s3.put_object(Bucket="repo1", Key="main/a", Body=b"1")
    commit = gw.api("POST", "/repositories/repo1/branches/main/commits", json={"message": "c"}).json()["id"]
    assert gw.api("POST", "/repositories/repo1/tags", json={"id": "v1", "ref": "main"}).status_code == 201
    for ref in ["v1", commit]:
        assert code_of(s3.put_object, Bucket="repo1", Key=f"{ref}/b", Body=b"x") == "NoSuchBucket"
        assert code_of(s3.delete_object, Bucket="repo1", Key=f"{ref}/a") == "NoSuchBucket"
        assert s3.get_object(Bucket="repo1", Key=f"{ref}/a")["Body"].read() == b"1"  # reads work
    make_repo(gw, "frozen", read_only=True)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket="frozen", Key="main/x", Body=b"x")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert "read-only" in e.value.response["Error"]["Message"]
    assert code_of(s3.create_multipart_upload, Bucket="frozen", Key="main/x") == "ReadOnlyRepository"
    assert keys_of([s3.list_objects_v2(Bucket="frozen", Prefix="main/")]) == []


def test_signatures_keys_presigned_urls_and_permissions(gw):
    s3 = client(gw)
    s3.put_object(Bucket="repo1", Key="main/p.txt", Body=b"presigned")
    assert code_of(client(gw, secret="wrong-secret-value").list_objects_v2, Bucket="repo1", Prefix="main/") \
        == "SignatureDoesNotMatch"
    assert code_of(client(gw, key="AKIANOSUCHKEY").list_objects_v2, Bucket="repo1", Prefix="main/") \
        == "InvalidAccessKeyId"
    r = requests.get(gw.url + "/repo1/main/p.txt", timeout=10)  # anonymous
    assert r.status_code == 403 and b"<Code>AccessDenied</Code>" in r.content
    # Signature V2 (header and presigned).
    v2 = client(gw, signature_version="s3")
    v2.put_object(Bucket="repo1", Key="main/v2.txt", Body=b"v2")
    assert v2.get_object(Bucket="repo1", Key="main/v2.txt")["Body"].read() == b"v2"
    url = v2.generate_presigned_url("get_object", Params={"Bucket": "repo1", "Key": "main/p.txt"}, ExpiresIn=60)
    assert "AWSAccessKeyId=" in url and requests.get(url, timeout=10).content == b"presigned"
    # Presigned V4: GET, PUT, and an expired URL.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "repo1", "Key": "main/p.txt"}, ExpiresIn=60)
    assert requests.get(url, timeout=10).content == b"presigned"
    tampered = url.replace("main/p.txt", "main/v2.txt")
    assert requests.get(tampered, timeout=10).status_code == 403
    put_url = s3.generate_presigned_url("put_object", Params={"Bucket": "repo1", "Key": "main/up.txt"}, ExpiresIn=60)
    assert requests.put(put_url, data=b"via url", timeout=10).status_code == 200
    assert s3.get_object(Bucket="repo1", Key="main/up.txt")["Body"].read() == b"via url"
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "repo1", "Key": "main/p.txt"}, ExpiresIn=1)
    eventually(lambda: b"expired" in requests.get(url, timeout=10).content, what="the 1 s presigned URL expires")
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and b"expired" in r.content
    # A user without a policy is refused by the same policies as the API.
    assert gw.api("POST", "/auth/users", json={"id": "nobody"}).status_code == 201
    creds = gw.api("POST", "/auth/users/nobody/credentials").json()
    nobody = client(gw, key=creds["access_key_id"], secret=creds["secret_access_key"])
    assert code_of(nobody.get_object, Bucket="repo1", Key="main/p.txt") == "AccessDenied"
    assert code_of(nobody.put_object, Bucket="repo1", Key="main/q.txt", Body=b"x") == "AccessDenied"
    assert code_of(s3.get_object, Bucket="repo1", Key="main/q.txt") == "NoSuchKey"


def test_wrong_body_hashes_store_nothing(gw):
    s3 = client(gw)
    # Content-MD5 that does not match the body.
    assert code_of(s3.put_object, Bucket="repo1", Key="main/m", Body=b"abc",
                   ContentMD5="1B2M2Y8AsgTpgAmY7PhCfg==") == "BadDigest"
    assert code_of(s3.put_object, Bucket="repo1", Key="main/c", Body=b"abc", ChecksumCRC32="AAAAAA==") == "BadDigest"
    assert keys_of([s3.list_objects_v2(Bucket="repo1", Prefix="main/")]) == []


def test_listing_stays_exact_during_staging_compaction(gw):
    """Listings running while a staging compaction swaps the branch see every key, once. The race is
    proven: rounds go on until a listing began before a swap and ended after it."""
    s3 = client(gw)
    keys = []
    compacted = lambda: gw.api("GET", "/repositories/repo1/branches/main/compact").json().get("meta_range_id", "")
    overlapped = 0
    for rnd in range(30):
        keys += [f"main/p{i % 4}/k{rnd:02d}{i:04d}" for i in range(100)]
        for k in keys[-100:]:
            s3.put_object(Bucket="repo1", Key=k, Body=b"x")
        stop, seen, errors, spans = threading.Event(), [], [], []

        def lister():
            while not stop.is_set():
                try:
                    before = compacted()
                    pages = s3.get_paginator("list_objects_v2").paginate(Bucket="repo1", Prefix="main/",
                                                                         PaginationConfig={"PageSize": 97})
                    seen.append(keys_of(pages))
                    spans.append((before, compacted()))
                    r = s3.list_objects_v2(Bucket="repo1", Prefix="main/", Delimiter="/")
                    seen.append([p["Prefix"] for p in r["CommonPrefixes"]])
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

        t = threading.Thread(target=lister)
        t.start()
        eventually(lambda: spans, what="a first listing")
        start = compacted()
        r = gw.api("POST", "/repositories/repo1/branches/main/compact")
        assert r.status_code in (200, 202), r.text
        eventually(lambda: compacted() != start, timeout=30, what="the compaction's swap")
        n = len(spans)
        eventually(lambda: len(spans) > n, what="a listing after the swap")
        stop.set()
        t.join()
        assert not errors, errors
        assert seen and all(s in (sorted(keys), ["main/p0/", "main/p1/", "main/p2/", "main/p3/"]) for s in seen)
        overlapped += sum(1 for b, a in spans if b == start and a != start)
        if overlapped:
            break
    assert overlapped, "no listing ever ran across a swap: the race was not tested"


AWS_CLI = Path(sys.executable).parent / "aws"


def test_aws_cli_copies_syncs_and_lists(gw, tmp_path):
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ADMIN_KEY, "AWS_SECRET_ACCESS_KEY": ADMIN_SECRET,
           "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}

    def aws(*args, ok=(0,)):
        # The AWS CLI the install script put in .venv (requirements-test.txt), never whatever PATH holds.
        p = subprocess.run([str(AWS_CLI), "--endpoint-url", gw.url, "s3", *args], capture_output=True, text=True,
                           env=env, timeout=120)
        assert p.returncode in ok, p.stdout + p.stderr
        return p.stdout

    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("a")
    (src / "sub" / "b.txt").write_text("b")
    big = os.urandom(9 * MIB)  # over the CLI's 8 MiB threshold: a multipart upload
    (src / "big.bin").write_bytes(big)
    aws("sync", str(src), "s3://repo1/main/synced/")
    out = aws("ls", "--recursive", "s3://repo1/main/synced/")
    assert sorted(line.split()[-1] for line in out.splitlines()) == [
        "main/synced/a.txt", "main/synced/big.bin", "main/synced/sub/b.txt"]
    aws("cp", "s3://repo1/main/synced/big.bin", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == big
    assert "PRE synced/" in aws("ls", "s3://repo1/main/")
    aws("rm", "--recursive", "s3://repo1/main/synced/")
    assert aws("ls", "--recursive", "s3://repo1/main/", ok=(0, 1)) == ""  # 1: nothing listed


def test_each_s3_operation_has_its_own_latency_metric(gw):
    s3 = client(gw)
    s3.put_object(Bucket="repo1", Key="main/m/a.txt", Body=b"a")
    s3.get_object(Bucket="repo1", Key="main/m/a.txt")["Body"].read()
    s3.head_object(Bucket="repo1", Key="main/m/a.txt")
    s3.list_objects_v2(Bucket="repo1", Prefix="main/m/")
    s3.delete_object(Bucket="repo1", Key="main/m/a.txt")
    metrics = requests.get(gw.url + "/metrics", timeout=30).text
    for method, op in [("PUT", "PutObject"), ("GET", "GetObject"), ("HEAD", "HeadObject"), ("GET", "ListObjects"),
                       ("DELETE", "DeleteObject")]:
        assert f'http_request_duration_seconds_count{{method="{method}",route="s3 {op}"}} 1' in metrics, op
