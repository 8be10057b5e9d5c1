"""Attacks on the S3 gateway: unsigned x-amz-* headers added to a signed request (2), bodies that do not
match their signed x-amz-content-sha256 (8), and learning which buckets exist without a policy (9): by
creating one, or by deleting objects in it."""
import pytest
import requests
from botocore.exceptions import ClientError


def error_of(fn, *args, **kw):
    with pytest.raises(ClientError) as e:
        fn(*args, **kw)
    r = e.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def exists(s3, bucket, key):
    try:
        s3.head_object(Bucket=bucket, Key=key)
        return True
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404, e.response
        return False


def after_signing(s3, operation, fn):
    """Runs fn(request) on every `operation` request of `s3` after it was signed, before it is sent."""
    def hook(request, **_):
        fn(request)
    s3.meta.events.register(f"before-send.s3.{operation}", hook)
    return hook


# --- 2. unsigned x-amz-* headers ---------------------------------------------------------------------

def test_a_presigned_put_with_an_unsigned_copy_source_is_refused(victim):
    from security.util import s3_client
    v = victim
    v4 = s3_client(v.server, signature_version="s3v4")  # boto3 presigns with V2 by default (the test below)
    url = v4.generate_presigned_url("put_object", Params={"Bucket": "lake", "Key": "main/public/upload.bin"},
                                    ExpiresIn=300)
    assert "X-Amz-Signature=" in url
    r = requests.put(url, data=b"", headers={"x-amz-copy-source": "other/main/secret/y"}, timeout=30)
    assert r.status_code == 403 and b"<Code>AccessDenied</Code>" in r.content, (r.status_code, r.text)
    assert not exists(v.s3, "lake", "main/public/upload.bin")
    for header, value in [("x-amz-meta-owner", "mallory"), ("x-amz-metadata-directive", "REPLACE"),
                          ("X-Amz-Copy-Source", "/other/main/secret/y")]:
        r = requests.put(url, data=b"x", headers={header: value}, timeout=30)
        assert r.status_code == 403 and b"<Code>AccessDenied</Code>" in r.content, (header, r.status_code, r.text)
        assert not exists(v.s3, "lake", "main/public/upload.bin")
    # The URL as it was meant: a plain upload, then a presigned read.
    r = requests.put(url, data=b"uploaded through the url", timeout=30)
    assert r.status_code == 200, r.text
    get = v4.generate_presigned_url("get_object", Params={"Bucket": "lake", "Key": "main/public/upload.bin"},
                                    ExpiresIn=300)
    r = requests.get(get, timeout=30)
    assert r.status_code == 200 and r.content == b"uploaded through the url"
    # A presigned GET with an unsigned x-amz-* header is refused as well.
    r = requests.get(get, headers={"x-amz-copy-source": "other/main/secret/y"}, timeout=30)
    assert r.status_code == 403 and b"<Code>AccessDenied</Code>" in r.content, (r.status_code, r.text)


def test_a_presigned_v2_put_with_an_unsigned_copy_source_is_refused(victim):
    from security.util import s3_client
    v = victim
    v2 = s3_client(v.server, signature_version="s3")
    url = v2.generate_presigned_url("put_object", Params={"Bucket": "lake", "Key": "main/public/v2.bin"},
                                    ExpiresIn=300)
    r = requests.put(url, data=b"", headers={"x-amz-copy-source": "other/main/secret/y"}, timeout=30)
    # V2 signs every x-amz-* header the request carries: one added later breaks the signature, as on AWS.
    assert r.status_code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in r.content, (r.status_code, r.text)
    assert not exists(v.s3, "lake", "main/public/v2.bin")
    assert requests.put(url, data=b"v2", timeout=30).status_code == 200


@pytest.mark.parametrize("header,value", [
    ("x-amz-copy-source", "other/main/secret/y"),
    ("x-amz-meta-owner", "mallory"),
    ("x-amz-tagging", "a=b"),
])
def test_an_amz_header_added_after_signing_is_refused(victim, header, value):
    v = victim
    after_signing(v.s3, "PutObject", lambda req: req.headers.__setitem__(header, value))
    status, code = error_of(v.s3.put_object, Bucket="lake", Key="main/public/late.bin", Body=b"")
    assert (status, code) == (403, "AccessDenied")
    plain = v.s3.get_object(Bucket="other", Key="main/secret/y")["Body"].read()
    assert plain  # the source is readable by the signer, so only the signature check stands in the way
    assert not exists(v.s3, "lake", "main/public/late.bin")


def test_signed_requests_still_work(victim):
    v = victim
    v.s3.put_object(Bucket="lake", Key="main/public/ok.bin", Body=b"fine", Metadata={"owner": "admin"})
    assert v.s3.get_object(Bucket="lake", Key="main/public/ok.bin")["Body"].read() == b"fine"
    v.s3.copy_object(Bucket="lake", Key="main/public/copy.bin", CopySource="other/main/secret/y")
    assert v.s3.get_object(Bucket="lake", Key="main/public/copy.bin")["Body"].read() == b"secret/y of the other repository"
    # bob may write public/* but not read the other repository: a copy from it is refused.
    assert error_of(v.bob_s3.copy_object, Bucket="lake", Key="main/public/bobs.bin",
                    CopySource="other/main/secret/y")[1] == "AccessDenied"
    assert v.bob_s3.get_object(Bucket="lake", Key="main/public/a")["Body"].read() == b"public a"


# --- 8. signed payload hashes on every body ----------------------------------------------------------

def test_delete_objects_whose_body_is_not_the_signed_one_deletes_nothing(victim):
    v = victim
    for k in ("main/public/keep1", "main/public/keep2"):
        v.s3.put_object(Bucket="lake", Key=k, Body=b"keep")

    def tamper(req):
        assert b"keep1" in req.body
        req.body = req.body.replace(b"keep1", b"keep2")  # same length: Content-Length stays right

    after_signing(v.s3, "DeleteObjects", tamper)
    status, code = error_of(v.s3.delete_objects, Bucket="lake", Delete={"Objects": [{"Key": "main/public/keep1"}]})
    assert (status, code) == (400, "XAmzContentSHA256Mismatch")
    assert exists(v.s3, "lake", "main/public/keep1") and exists(v.s3, "lake", "main/public/keep2")


def test_complete_multipart_whose_body_is_not_the_signed_one_completes_nothing(victim):
    v = victim
    key = "main/public/mp.bin"
    uid = v.s3.create_multipart_upload(Bucket="lake", Key=key)["UploadId"]
    etag = v.s3.upload_part(Bucket="lake", Key=key, UploadId=uid, PartNumber=1, Body=b"the only part")["ETag"]
    wrong = '"' + "0" * 32 + '"'
    assert len(wrong) == len(etag)

    def tamper(req):
        assert wrong.strip('"').encode() in req.body
        req.body = req.body.replace(wrong.strip('"').encode(), etag.strip('"').encode())

    hook = after_signing(v.s3, "CompleteMultipartUpload", tamper)
    status, code = error_of(v.s3.complete_multipart_upload, Bucket="lake", Key=key, UploadId=uid,
                            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": wrong}]})
    assert (status, code) == (400, "XAmzContentSHA256Mismatch")
    assert not exists(v.s3, "lake", key)
    assert [p["PartNumber"] for p in v.s3.list_parts(Bucket="lake", Key=key, UploadId=uid)["Parts"]] == [1]
    v.s3.meta.events.unregister("before-send.s3.CompleteMultipartUpload", hook)
    v.s3.complete_multipart_upload(Bucket="lake", Key=key, UploadId=uid,
                                   MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert v.s3.get_object(Bucket="lake", Key=key)["Body"].read() == b"the only part"


def test_put_object_whose_body_is_not_the_signed_one_stores_nothing(victim):
    v = victim

    def tamper(req):
        body = req.body.read() if hasattr(req.body, "read") else req.body
        req.body = b"X" * len(body)

    after_signing(v.s3, "PutObject", tamper)
    status, code = error_of(v.s3.put_object, Bucket="lake", Key="main/public/tampered", Body=b"original")
    assert status == 400 and code in ("XAmzContentSHA256Mismatch", "BadDigest")
    assert not exists(v.s3, "lake", "main/public/tampered")


# --- 9. no way to tell which buckets exist --------------------------------------------------------------

def test_creating_a_bucket_without_a_policy_reveals_nothing(victim):
    v = victim
    existing = error_of(v.nobody_s3.create_bucket, Bucket="lake")
    missing = error_of(v.nobody_s3.create_bucket, Bucket="missing-repo")
    assert existing == (403, "AccessDenied"), existing
    assert missing == (403, "AccessDenied"), missing
    # Anonymous too.
    a = requests.put(v.server.url + "/lake", timeout=30)
    b = requests.put(v.server.url + "/missing-repo", timeout=30)
    assert (a.status_code, b.status_code) == (403, 403), (a.text, b.text)


def test_deleting_objects_without_a_policy_reveals_nothing(victim):
    """A multi-object delete by someone who may delete none of the keys answers alike whether the
    repository (or its branch) exists: every key refused, nothing deleted. Through S3 and the lakeFS API."""
    v = victim

    def s3_attempt(bucket):
        try:
            r = v.nobody_s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "main/secret/x"}]})
        except ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
        return r["ResponseMetadata"]["HTTPStatusCode"], [(e["Key"], e["Code"]) for e in r.get("Errors", [])]

    existing = s3_attempt("lake")
    assert existing == (200, [("main/secret/x", "AccessDenied")]), existing
    assert s3_attempt("missing-repo") == existing

    nobody = v.api.as_user(v.nobody)

    def api_attempt(repo, branch):
        r = nobody("POST", f"/repositories/{repo}/branches/{branch}/objects/delete", json={"paths": ["secret/x"]})
        return r.status_code, [(e["path"], e["status_code"]) for e in r.json().get("errors", [])]

    existing = api_attempt("lake", "main")
    assert existing == (200, [("secret/x", 401)]) or existing == (200, [("secret/x", 403)]), existing
    assert api_attempt("missing-repo", "main") == existing
    assert api_attempt("lake", "no-such-branch") == existing
    assert exists(v.s3, "lake", "main/secret/x")
    # Who may delete still learns that a repository is missing, as in lakeFS.
    r = v.api("POST", "/repositories/missing-repo/branches/main/objects/delete", json={"paths": ["secret/x"]})
    assert r.status_code == 404, r.text
