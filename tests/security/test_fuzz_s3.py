"""A fuzzer of the S3 gateway. Requests are built for every operation the gateway serves, signed with a
real key by botocore's signers (SigV4 header, SigV4 presigned, V2 header and presigned; aws-chunked bodies
signed chunk by chunk), and then mutated: signatures, dates, credentials, header names and values,
unsigned x-amz-* headers, methods, paths, query strings, XML bodies (DeleteObjects,
CompleteMultipartUpload), Range headers, keys (odd UTF-8, invalid UTF-8, '..', '//', very long),
aws-chunked framing, multipart sequences (parts out of order, completes without parts, aborts twice).

The rules: every answer is a 4xx, or a 2xx only where the request would be accepted without the mutation
(a request whose mutation must be refused, such as a changed signature, never gets a 2xx); never a 5xx
(501 NotImplemented, the gateway's answer to what it does not serve, is counted but allowed); the server
is alive at the end; and a refused request changes nothing: a snapshot of every repository's branches,
objects with their checksums, multipart uploads and their parts is compared before and after each batch
of refused requests.

SEDIMENT_FUZZ_S3_CASES (default 3000) sets the number of requests, SEDIMENT_FUZZ_S3_SEED (or
SEDIMENT_FUZZ_SEED) the seed. Findings go to build/test-artifacts/security/fuzz-s3-findings.txt."""
import random
import time

import pytest

from security.s3cases import BUCKETS, SEEDED, S3Fuzzer
from security.s3wire import NoReply, send
from security.util import (artifact, catalog_state, create_branch, create_repo, create_user, died, diff_states,
                           env_int, fuzz_seed, record_line, s3_client, upload)

CASES = env_int("SEDIMENT_FUZZ_S3_CASES", 3000)
SEED = fuzz_seed("SEDIMENT_FUZZ_S3_SEED", 25)
MAX_CRASHES = 5  # restarts after a crash, so that one crash does not hide the next


def did_something(case, reply):
    """A 2xx that is not a refusal: DeleteObjects and CompleteMultipartUpload answer 200 with errors inside."""
    if "?delete" in case.wired.target or "&delete" in case.wired.target:
        return b"<Deleted>" in reply.body
    return b"<Error>" not in reply.body


def s3_state(server, api, s3):
    """catalog_state, and every multipart upload with its parts. Listings that fail are part of the state
    (and reported once), so that the fuzzer goes on."""
    state = catalog_state(api, strict=False)
    for bucket in BUCKETS:
        try:
            uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
        except Exception as e:  # noqa: BLE001 - recorded in the state
            state[("error", "uploads", bucket)] = ("", (repr(e)[:300],))
            continue
        for u in uploads:
            key = u["Key"]
            try:
                parts = s3.list_parts(Bucket=bucket, Key=key, UploadId=u["UploadId"]).get("Parts", [])
                parts = tuple((p["PartNumber"], p["ETag"], p["Size"]) for p in parts)
            except Exception as e:  # noqa: BLE001 - recorded in the state
                parts = ("error", repr(e)[:300])
            state[("upload", bucket, u["Key"], u["UploadId"])] = ("", parts)
    return state


@pytest.fixture
def fuzz_gateway(catalog_server):
    server = catalog_server()
    api = server.api
    for b in BUCKETS:
        create_repo(api, b, server.namespace(b))
    create_branch(api, "fuzz", "dev")
    for k in SEEDED:
        ref, path = k.split("/", 1)
        assert upload(api, "fuzz", ref, path, f"seeded {k}".encode()).status_code == 201
    assert upload(api, "fuzz2", "main", "seed/x", b"x of fuzz2").status_code == 201
    nobody = create_user(api, "nobody")
    return server, nobody


def test_fuzz_s3_gateway(fuzz_gateway):
    server, nobody = fuzz_gateway
    api = server.api
    s3 = s3_client(server)
    rng = random.Random(SEED)
    fz = S3Fuzzer(server, nobody, rng)
    started = time.monotonic()
    baseline = None
    pending = []  # requests refused (or reads) since the baseline: none may have changed anything
    checks = 0

    reported_errors = set()

    def snapshot():
        state = s3_state(server, api, s3)
        for k, v in state.items():
            if k[0] == "error" and k not in reported_errors:
                reported_errors.add(k)
                fz.findings.append(("a listing fails after accepted requests", f"{k}: {v}", "(the snapshot's listing)"))
        return state

    def check():
        nonlocal baseline, pending, checks
        now = snapshot()
        checks += 1
        if now != baseline:
            fz.findings.append(("state changed by refused requests", "\n".join(diff_states(baseline, now)),
                                "\n\n".join(f"[{c.label}] -> {st}\n{c.wired.describe(200)}" for c, st in pending[-20:])))
        baseline, pending = now, []

    baseline = snapshot()
    sent, crashes = 0, 0
    slowest = []
    for i in range(CASES):
        case = fz.case()
        may_change = case.write and not case.must_refuse
        if may_change and pending:
            check()
        t0 = time.monotonic()
        try:
            reply = send(server.port, case.wired)
        except NoReply as e:
            if not died(server):
                fz.findings.append(("no reply", str(e), case.wired.describe()))
            else:
                crashes += 1
                fz.findings.append(("crash", f"exit code {server.proc.wait()} at case {sent}; the server's last lines:\n"
                                    + "\n".join(server.lines[-5:]), case.wired.describe()))
                if crashes > MAX_CRASHES:
                    break
                server = server.restart()  # and go on: one crash should not hide what comes after it
                baseline, pending = snapshot(), []
            continue
        finally:
            sent += 1
        took = time.monotonic() - t0
        slowest = sorted(slowest + [(took, case.label, reply.status)], reverse=True)[:5]
        fz.stats[reply.status // 100 * 100] += 1
        fz.stats[f"{case.label.split('/')[0]}"] += 1
        if reply.status == 501:
            fz.stats["501"] += 1
        elif reply.status >= 500:
            fz.findings.append((f"{reply.status} {reply.code()}", reply.body[:500].decode("utf-8", "replace"),
                                f"[{case.label}]\n" + case.wired.describe()))
        ok = 200 <= reply.status < 300
        if ok and case.must_refuse and did_something(case, reply):
            fz.findings.append((f"accepted ({reply.status}) a request that must be refused", case.label,
                                case.wired.describe()))
        fz.learn(case, reply)
        if ok and case.write:
            pending = []
            baseline = snapshot()
        else:
            pending.append((case, reply.status))
            if len(pending) >= 40:
                check()
    if server.proc.poll() is None:
        check()
    elapsed = time.monotonic() - started
    alive = server.proc.poll() is None
    summary = (f"{sent} cases in {elapsed:.1f} s (seed {SEED}; {checks} state checks; {crashes} crashes; "
               f"2xx {fz.stats[200]}, 3xx {fz.stats[300]}, 4xx {fz.stats[400]}, 501 {fz.stats['501']}, "
               f"other 5xx {fz.stats[500] - fz.stats['501']}; findings {len(fz.findings)}; "
               f"server {'alive' if alive else 'DEAD'})")
    print("s3 gateway fuzzer:", summary)
    record_line("fuzz-counts.txt", "s3-gateway", summary)
    report = artifact("fuzz-s3-findings.txt")
    report.write_text(summary + "\nslowest: " + ", ".join(f"{t:.2f} s {label} -> {st}" for t, label, st in slowest)
                      + "\n\n" + "\n\n".join(f"### {a}\n{b}\n--- request:\n{c}" for a, b, c in fz.findings))
    assert alive and not crashes, f"the server died {crashes} time(s): see {report}"
    assert not fz.findings, f"{len(fz.findings)} findings (all in {report}); the first:\n" + \
        "\n\n".join(f"### {a}\n{b}\n--- request:\n{c}" for a, b, c in fz.findings[:5])
