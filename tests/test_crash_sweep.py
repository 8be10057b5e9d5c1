"""The crash sweep, short form (each failpoint's first hit; tests/crash_sweep.py has the full form):
a SIGKILL at every failpoint, a second crash during recovery, then the invariants on both back-ends."""
import re
from pathlib import Path

import pytest

import crash_sweep

ROOT = Path(__file__).resolve().parent.parent


def test_every_failpoint_is_in_the_code():
    names = crash_sweep.all_failpoints()
    assert len(names) == len(set(names)) >= 18
    code = "\n".join(p.read_text() for p in (ROOT / "src").rglob("*.cc"))
    for name in names:
        assert f'"{name}"' in code, f"failpoint {name} is listed in failpoint.h but placed nowhere"
    placed = set(re.findall(r'(?:SEDIMENT_FAILPOINT\(|failpoint::Hit\()"([a-z._]+)"', code))
    assert placed <= set(names), f"unlisted failpoints: {placed - set(names)}"


@pytest.mark.parametrize("kind,dsn", crash_sweep.backends(), ids=[k for k, _ in crash_sweep.backends()])
def test_crash_at_every_failpoint_loses_nothing(kind, dsn, capsys):
    results = []
    for fp in crash_sweep.all_failpoints():
        fired, violations = crash_sweep.run_one(fp, 1, kind, dsn)
        results.append((fp, kind, 1, int(fired), len(violations), violations[0] if violations else ""))
    with capsys.disabled():
        print("\n" + crash_sweep.table(results))
    bad = [(fp, first) for fp, _, _, _, n, first in results if n]
    assert not bad, f"invariant violations: {bad}"
    not_fired = [fp for fp, _, _, fired, _, _ in results if not fired]
    expected_silent = {"kv.postgres.commit_lost"} if kind == "rocksdb" else set()
    assert set(not_fired) == expected_silent, f"failpoints the workload never reached: {not_fired}"
