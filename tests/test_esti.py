"""lakeFS's own system tests (esti, built at the pinned lakeFS version by scripts/install-test.sh) against
`sediment serve`: the REST API, lakectl and the S3 gateway as lakeFS's users meet them, twice: on
local storage, and on S3 storage (the test MinIO).

tests/esti/tests.txt (local) and tests/esti/tests-minio.txt (MinIO) list every esti test with what we
expect of it there: `pass`, `skip` (it skips against lakeFS OSS on that storage too), or `exclude` with
the reason it is left out. A test that is missing from a list, or behaves otherwise, fails the run."""
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest
import requests

from conftest import ROOT, s3_settings

ESTI = ROOT / ".cache" / "bin" / "esti"
LIST = ROOT / "tests" / "esti" / "tests.txt"
MINIO_LIST = ROOT / "tests" / "esti" / "tests-minio.txt"
KEY, SECRET = "AKIAIOSFDNN7EXAMPLEQ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
RESULT = re.compile(r"^--- (PASS|FAIL|SKIP): (Test\w+) ", re.M)


def expectations(path=LIST):
    out = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        assert len(parts) >= 2 and parts[1] in ("pass", "skip", "exclude"), f"{path}:{n}: {line!r}"
        assert parts[1] == "pass" or len(parts) == 3, f"{path}:{n}: a skip or exclude needs its reason"
        out[parts[0]] = parts[1]
    return out


def run_esti(start_server, tmp_path, listing, server_toml, namespace, esti_env):
    """Runs every esti test of `listing` but the excluded against a server configured with
    `server_toml`, repositories under `namespace`; fails on any result the list does not expect."""
    if not ESTI.exists():
        pytest.skip("esti is not built (scripts/install-test.sh builds it)")
    module_dir = Path((ROOT / ".cache" / "bin" / "lakefs-module.dir").read_text().strip())
    expected = expectations(listing)
    listed = {m for f in (module_dir / "esti").glob("*_test.go")
              for m in re.findall(r"^func (Test\w+)\(t \*testing\.T\)", f.read_text(), re.M)}
    unlisted = sorted(listed - set(expected))
    assert not unlisted, f"esti tests missing from {listing}: {unlisted}"

    cfg = tmp_path / "sediment.toml"
    # esti's webhook receivers listen on this machine: loopback is opened to webhooks, as an operator would.
    cfg.write_text(server_toml + '[actions]\nwebhook_allowed_hosts = ["localhost", "127.0.0.0/8", "::1"]\n')
    # The hooks tests' actions read this variable ({{ ENV.LAKEFSACTION_VAR }}) and check its value.
    server = start_server("--config", str(cfg), env={"LAKEFSACTION_VAR": "this_is_actions_var"})
    excluded = sorted(t for t, e in expected.items() if e == "exclude")
    # The import tests write their sources under the test process's temporary directory: one the
    # server may read (inside its local namespace root).
    esti_tmp = tmp_path / "esti-tmp"
    esti_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(esti_tmp),
           "ESTI_ENDPOINT_URL": server.url, "ESTI_S3_ENDPOINT": server.url.removeprefix("http://"),
           "ESTI_FORCE_PATH_STYLE": "true", "ESTI_STORAGE_NAMESPACE": namespace,
           "ESTI_BINARIES_DIR": str(ESTI.parent), "ESTI_SETUP_LAKEFS": "true",
           "AWS_REGION": "us-east-1", "TEST_WEBHOOK_HOST": "localhost", **esti_env}
    p = subprocess.run([str(ESTI), "-test.v", "-test.timeout", "20m", "-test.skip", "^(" + "|".join(excluded) + ")$",
                        "-system-tests", "-use-local-credentials", "-admin-access-key-id", KEY,
                        "-admin-secret-access-key", SECRET],
                       capture_output=True, text=True, cwd=module_dir / "esti", env=env, timeout=1500)
    log = tmp_path / "esti.log"
    log.write_text(p.stdout + p.stderr)
    got = {name: state.lower() for state, name in RESULT.findall(p.stdout)}
    wrong = {t: (e, got.get(t, "did not run")) for t, e in expected.items()
             if e != "exclude" and got.get(t) != e}
    assert not wrong, f"esti results differ from {listing} (test: (expected, got)); log in {log}:\n{wrong}"
    assert requests.get(server.url + "/api/v1/healthcheck", timeout=10).status_code == 204


def test_esti_system_tests(start_server, tmp_path):
    run_esti(start_server, tmp_path, LIST, f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n',
             f"local://{tmp_path}/ns", {"ESTI_BLOCKSTORE_TYPE": "local"})


def test_esti_system_tests_on_minio(start_server, tmp_path):
    """The same on S3 storage: objects, metadata and the repositories' namespaces in the test bucket."""
    prefix = f"esti-{uuid.uuid4().hex[:10]}"
    settings = s3_settings(prefix)
    if settings is None:
        pytest.skip("no S3 configured (scripts/test.sh starts MinIO)")
    base = f"s3://{os.environ['SEDIMENT_TEST_S3_BUCKET']}/{prefix}"
    # esti's S3 import tests read lakeFS CI's bucket: allowed, as an operator allows an import source. It
    # does not exist on this MinIO, so those imports fail (as they do against lakeFS OSS here); the cancel
    # test cancels one of them.
    ci_source = "s3://esti-system-testing-data/import-test-data"
    run_esti(start_server, tmp_path, MINIO_LIST,
             settings + f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n'
                        f's3_namespace_prefixes = ["{base}", "{ci_source}"]\n',
             f"{base}/ns", {"ESTI_BLOCKSTORE_TYPE": "s3",
                            "ESTI_AWS_ACCESS_KEY_ID": os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"],
                            "ESTI_AWS_SECRET_ACCESS_KEY": os.environ["SEDIMENT_TEST_S3_SECRET_KEY"]})
