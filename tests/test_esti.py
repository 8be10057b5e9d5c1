"""lakeFS's own system tests (esti, built at the pinned lakeFS version by scripts/install-test.sh) against
`sediment serve`: the REST API, lakectl and the S3 gateway as lakeFS's users meet them.

tests/esti/tests.txt lists every esti test with what we expect of it here: `pass`, `skip` (it skips
against lakeFS OSS on local storage too), or `exclude` with the reason it is left out. A test that
is missing from the list, or behaves otherwise, fails this test."""
import os
import re
import subprocess
from pathlib import Path

import pytest
import requests

from conftest import ROOT

ESTI = ROOT / ".cache" / "bin" / "esti"
LIST = ROOT / "tests" / "esti" / "tests.txt"
KEY, SECRET = "AKIAIOSFDNN7EXAMPLEQ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
RESULT = re.compile(r"^--- (PASS|FAIL|SKIP): (Test\w+) ", re.M)


def expectations():
    out = {}
    for n, line in enumerate(LIST.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        assert len(parts) >= 2 and parts[1] in ("pass", "skip", "exclude"), f"{LIST}:{n}: {line!r}"
        assert parts[1] == "pass" or len(parts) == 3, f"{LIST}:{n}: a skip or exclude needs its reason"
        out[parts[0]] = parts[1]
    return out


def test_esti_system_tests(start_server, tmp_path):
    if not ESTI.exists():
        pytest.skip("esti is not built (scripts/install-test.sh builds it)")
    module_dir = Path((ROOT / ".cache" / "bin" / "lakefs-module.dir").read_text().strip())
    expected = expectations()
    listed = {m for f in (module_dir / "esti").glob("*_test.go")
              for m in re.findall(r"^func (Test\w+)\(t \*testing\.T\)", f.read_text(), re.M)}
    unlisted = sorted(listed - set(expected))
    assert not unlisted, f"esti tests missing from {LIST}: {unlisted}"

    cfg = tmp_path / "sediment.toml"
    cfg.write_text(f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n')
    server = start_server("--config", str(cfg))
    excluded = sorted(t for t, e in expected.items() if e == "exclude")
    # The import tests write their sources under the test process's temporary directory: one the
    # server may read (inside its local namespace root).
    esti_tmp = tmp_path / "esti-tmp"
    esti_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(esti_tmp),
           "ESTI_ENDPOINT_URL": server.url, "ESTI_S3_ENDPOINT": server.url.removeprefix("http://"),
           "ESTI_FORCE_PATH_STYLE": "true", "ESTI_STORAGE_NAMESPACE": f"local://{tmp_path}/ns",
           "ESTI_BLOCKSTORE_TYPE": "local", "ESTI_BINARIES_DIR": str(ESTI.parent), "ESTI_SETUP_LAKEFS": "true",
           "AWS_REGION": "us-east-1", "TEST_WEBHOOK_HOST": "localhost"}
    p = subprocess.run([str(ESTI), "-test.v", "-test.timeout", "20m", "-test.skip", "^(" + "|".join(excluded) + ")$",
                        "-system-tests", "-use-local-credentials", "-admin-access-key-id", KEY,
                        "-admin-secret-access-key", SECRET],
                       capture_output=True, text=True, cwd=module_dir / "esti", env=env, timeout=1500)
    log = tmp_path / "esti.log"
    log.write_text(p.stdout + p.stderr)
    got = {name: state.lower() for state, name in RESULT.findall(p.stdout)}
    wrong = {t: (e, got.get(t, "did not run")) for t, e in expected.items()
             if e != "exclude" and got.get(t) != e}
    assert not wrong, f"esti results differ from {LIST} (test: (expected, got)); log in {log}:\n{wrong}"
    assert requests.get(server.url + "/api/v1/healthcheck", timeout=10).status_code == 204
