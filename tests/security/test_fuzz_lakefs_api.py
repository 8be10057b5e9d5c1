"""A fuzzer of the lakeFS API: schemathesis generates requests for every operation of lakeFS's own
OpenAPI description (api/swagger.yml of the lakeFS version Sediment is tested against, Apache-2.0, read
from the Go module cache that scripts/install-test.sh fills; not copied here), both valid ones and ones
that break the schema, sent as the admin (Basic). Half the cases name the repository and branch that
exist, so that they get past the look-ups.

The rules: no 5xx (501, what Sediment answers for parts of lakeFS it does not implement, is fine), and
the server is alive at the end.

SEDIMENT_FUZZ_LAKEFS_EXAMPLES (default 10) is the number of examples per operation and per generation
mode (positive, negative); SEDIMENT_FUZZ_LAKEFS_SEED (or SEDIMENT_FUZZ_SEED) the seed. Findings go to
build/test-artifacts/security/fuzz-lakefs-findings.txt."""
import glob
import os
import time
from collections import Counter
from pathlib import Path

import pytest
import requests

from conftest import ROOT
from security.util import (ADMIN, artifact, basic, create_branch, create_repo, env_int, fuzz_seed, record_line,
                           upload)

EXAMPLES = env_int("SEDIMENT_FUZZ_LAKEFS_EXAMPLES", 10)
SEED = fuzz_seed("SEDIMENT_FUZZ_LAKEFS_SEED", 25)
PINS = {"repository": "fuzzrepo", "branch": "main", "ref": "main", "sourceRef": "dev", "destinationBranch": "main",
        "leftRef": "main", "rightRef": "dev", "commitId": "main", "tag": "v1", "userId": "fuzzer"}
# Never pinned: they would end what the rest of the run needs.
UNPINNED = {("delete", "/repositories/{repository}"), ("delete", "/auth/users/{userId}")}


def swagger_path():
    """lakeFS's OpenAPI file from the Go module cache (scripts/install-test.sh records the module's dir)."""
    recorded = ROOT / ".cache" / "bin" / "lakefs-module.dir"
    if recorded.exists():
        p = Path(recorded.read_text().strip()) / "api" / "swagger.yml"
        if p.exists():
            return p
    gomodcache = os.environ.get("GOMODCACHE") or str(Path.home() / "go" / "pkg" / "mod")
    found = sorted(glob.glob(f"{gomodcache}/github.com/treeverse/lakefs@*/api/swagger.yml"))
    return Path(found[-1]) if found else None


def describe(kw):
    headers = "\n".join(f"{k}: {v}" for k, v in (kw.get("headers") or {}).items() if k.lower() != "authorization")
    body = kw.get("json", kw.get("data", kw.get("files")))
    return (f"{kw['method']} {kw['url']} params={kw.get('params')!r}\n{headers}\n"
            f"Authorization: Basic <admin>\nbody: {repr(body)[:600]}")


def test_fuzz_lakefs_api(catalog_server):
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis.configuration import set_hypothesis_home_dir
    set_hypothesis_home_dir(str(ROOT / "build" / "hypothesis"))  # its caches, out of the source tree
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable

    spec = swagger_path()
    if spec is None:
        pytest.skip("lakeFS's swagger.yml not found (scripts/install-test.sh fetches the lakeFS module)")
    # S3 namespaces only under a bucket that is not there: no case reaches out to AWS (a 503 from a
    # network that is not there would say nothing about the server).
    server = catalog_server(extra_toml='s3_namespace_prefixes = ["s3://sediment-fuzz-no-such-bucket"]\n')
    api = server.api
    create_repo(api, "fuzzrepo", server.namespace("fuzzrepo"))
    assert upload(api, "fuzzrepo", "main", "a/b.txt", b"fuzz").status_code == 201
    create_branch(api, "fuzzrepo", "dev")
    assert api("POST", "/repositories/fuzzrepo/tags", json={"id": "v1", "ref": "main"}).status_code == 201
    assert api("POST", "/auth/users", json={"id": "fuzzer"}).status_code == 201

    schema = schemathesis.openapi.from_path(str(spec))
    operations = [o.ok() for o in schema.get_all_operations()]
    base_url = server.url + "/api/v1"
    session = requests.Session()
    auth = basic(*ADMIN)
    stats, findings = Counter(), []
    started = time.monotonic()

    def send(case, pin, operation):
        if pin and (operation.method, operation.path) not in UNPINNED:
            for name in list((case.path_parameters or {})):
                if name in PINS:
                    case.path_parameters[name] = PINS[name]
        kw = case.as_transport_kwargs(base_url=base_url)
        headers = {k: v for k, v in (kw.get("headers") or {}).items() if k.lower() not in ("authorization", "cookie")}
        headers["Authorization"] = auth
        kw["headers"] = headers
        kw.pop("cookies", None)
        stats["cases"] += 1
        try:
            r = session.request(**kw, timeout=30)
        except (requests.exceptions.InvalidHeader, requests.exceptions.InvalidURL, ValueError, UnicodeError):
            stats["unsendable"] += 1  # the client refuses to send it (a header with a newline, ...)
            return
        except requests.exceptions.RequestException as e:
            findings.append((f"no reply: {e!r}"[:300], describe(kw)))
            return
        stats[r.status_code // 100 * 100] += 1
        if r.status_code == 501:
            stats[501] += 1
        elif r.status_code >= 500:
            findings.append((f"{r.status_code} {r.text[:300]}", f"[{operation.label}]\n" + describe(kw)))

    def runner(operation, strategy):
        @seed(SEED)
        @settings(max_examples=EXAMPLES, database=None, deadline=None, derandomize=False,
                  suppress_health_check=list(HealthCheck), phases=[Phase.generate])
        @given(case=strategy, pin=st.booleans())
        def run(case, pin):
            send(case, pin, operation)
        return run

    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            if server.proc.poll() is not None:
                break
            try:
                runner(operation, operation.as_strategy(generation_mode=mode))()
            except Unsatisfiable:
                stats["unsatisfiable"] += 1  # no request breaks this operation's schema (no parameters)
    elapsed = time.monotonic() - started
    alive = server.proc.poll() is None
    summary = (f"{stats['cases']} cases over {len(operations)} operations in {elapsed:.1f} s (seed {SEED}, "
               f"{EXAMPLES} per operation and mode; 2xx {stats[200]}, 4xx {stats[400]}, 501 {stats[501]}, "
               f"other 5xx {stats[500] - stats[501]}, not sendable {stats['unsendable']}; findings {len(findings)}; "
               f"server {'alive' if alive else 'DEAD'})")
    print("lakeFS API fuzzer:", summary)
    record_line("fuzz-counts.txt", "lakefs-api", summary)
    report = artifact("fuzz-lakefs-findings.txt")
    report.write_text(summary + "\n\n" + "\n\n".join(f"### {a}\n{b}" for a, b in findings))
    assert alive, f"the server died: {server.output()[-3000:]}"
    assert not findings, f"{len(findings)} findings (all in {report}); the first:\n" + \
        "\n\n".join(f"### {a}\n{b}" for a, b in findings[:5])
