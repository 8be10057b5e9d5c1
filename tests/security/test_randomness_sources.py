"""Randomness that anyone could profit from guessing comes from one CSPRNG helper (src/base/crypto.h).

No source outside tests may draw randomness from anything else; seeded generators are allowed only where
the output must be reproducible (the simulator's week of appends, the benchmark's data) and is no secret.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATTERN = re.compile(r"\b(mt19937(_64)?|random_device|minstd_rand|default_random_engine|rand\s*\(\s*\)|srand|"
                     r"drand48|random\s*\(\s*\)|RAND_bytes|RAND_priv_bytes|getrandom|/dev/u?random)\b")
# file -> why it may
ALLOWED = {
    "src/base/crypto.cc": "the one CSPRNG helper (OpenSSL RAND_bytes)",
    "src/table/simulator.cc": "a seeded, reproducible simulation of appends; nothing secret",
    "src/bench/scale_bench.cc": "seeded benchmark data, the same every run",
    "src/base/test_util.cc": "test support",
    "src/kv/kv_conformance.cc": "test support (the conformance suite every KV driver runs)",
}


def test_no_source_draws_randomness_but_the_helper():
    offenders = []
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix not in (".cc", ".h") or path.name.endswith("_test.cc") or path.name.endswith("_testing.h"):
            continue
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            code = line.split("//", 1)[0]
            if PATTERN.search(code):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert not offenders, "randomness from outside src/base/crypto.h:\n" + "\n".join(offenders)


def test_allowed_files_still_exist():
    for rel in ALLOWED:
        assert (ROOT / rel).is_file(), f"{rel} is allowed to use a seeded generator but no longer exists"
