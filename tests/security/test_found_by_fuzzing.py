"""What the fuzzers of this suite found, each pinned down as a plain test so that it stays fixed even if
a fuzzer's seed or case mix changes."""
import requests

from security.s3wire import Request, Signer, encode_path, send
from security.util import ADMIN, ADMIN_KEY, ADMIN_SECRET, create_repo, s3_client
from tables_util import append, ipc

T = "/api/v1/datasets/eth/tables/logs"


def test_a_scan_that_names_a_column_twice_is_answered_in_full_or_refused(start_server):
    """A repeated column in ?columns= with a filter on another column crashed the server (SIGSEGV in
    Scan::Process); without the filter the stream was cut short after its 200. The tables API is open
    before set-up, so anyone could stop the server this way."""
    server = start_server()
    assert server.put(T, data=ipc()).status_code == 201
    assert append(server, "logs", 1, 3).status_code == 201
    for params in [{"columns": "block_num,block_num", "filter": "value >= 5000"},
                   {"columns": "log_index,log_index", "filter": "value >= 5000"},
                   {"columns": "block_num,block_num"},
                   {"columns": ",".join(["value"] * 50), "filter": "log_index < 2"},
                   {"columns": "value,log_index,value", "format": "arrow"}]:
        try:
            r = requests.get(server.url + T + "/scan", params=params, timeout=30)
            r.content  # noqa: B018 - the whole body, which must not end short
        except requests.exceptions.RequestException as e:
            raise AssertionError(f"{params}: {e!r}; server alive: {server.proc.poll() is None}") from e
        assert r.status_code in (200, 400), (params, r.status_code, r.text[:300])
        assert server.proc.poll() is None, params


def test_an_upload_with_a_key_that_is_not_utf8_is_refused_not_a_500(catalog_server):
    """CreateMultipartUpload of a key holding invalid UTF-8 (%F0%9F%98 is a cut 4-byte sequence)
    answered 500 (nlohmann::json type_error.316 while storing the upload)."""
    server = catalog_server()
    create_repo(server.api, "raw", server.namespace("raw"))
    signer = Signer(f"127.0.0.1:{server.port}", ADMIN_KEY, ADMIN_SECRET)
    for key in [b"main/\xf0\x9f\x98/x", b"main/\xff\xfe", b"main/ok\xc3\x28"]:
        for req in [Request("POST", encode_path("raw", key), [("uploads", None)]),
                    Request("PUT", encode_path("raw", key), [], {}, b"data")]:
            reply = send(server.port, signer.v4(req))
            assert reply.status < 500, (req.method, key, reply.status, reply.body[:300])
    # Whatever was accepted lists and reads back.
    s3 = s3_client(server)
    assert s3.list_objects_v2(Bucket="raw", Prefix="main/")["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.list_multipart_uploads(Bucket="raw")
    r = requests.get(server.url + "/api/v1/repositories/raw/refs/main/objects/ls", auth=ADMIN, timeout=30)
    assert r.status_code == 200, r.text


def test_a_namespace_that_names_no_possible_bucket_is_refused_without_reaching_out(catalog_server):
    """POST /repositories with storage_namespace s3://<not a bucket name> answered 503 after trying to
    reach the bucket at AWS (found by the lakeFS API fuzzer): a name no bucket can have is the
    client's error, known without a network call."""
    server = catalog_server()
    for ns in ["s3://\u023e", "s3://_x\U0001f3fb", "s3://w", "s3://UPPER/x", "s3://a..b/x", "s3://-x-/y",
               "s3://" + "b" * 64 + "/x"]:
        r = server.api("POST", "/repositories", json={"name": "nsrepo", "storage_namespace": ns}, timeout=30)
        assert r.status_code == 400, (ns, r.status_code, r.text)
