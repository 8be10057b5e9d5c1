"""The docs are a contract (issue 47), checked two ways:

- Every fenced `sh`, `python`, `sql` and `toml` block of README.md and docs/*.md runs as written, in
  document order (README first), against one server started as scripts/run.sh starts it (config/demo.toml),
  from a directory laid out like a clone (build/, .cache/, config/, .venv-engines/ linked in). The only
  edits are the server's addresses: it takes free ports, not 8000, 1602 and 1603. `sh` blocks run in bash
  with `set -euo pipefail` and a `curl` that fails on an HTTP error, and what they `export` carries over;
  `python` blocks run in .venv (or .venv-engines when they import an engine); `sql` blocks run statement by
  statement in .venv-engines' DuckDB; `toml` blocks must pass `sediment check-config`. A block the test
  cannot run says why on a `<!-- docs-test: not run: ... -->` line above it.
- docs/configuration.md lists every setting `sediment options` prints (the table the server validates
  with), with its default, its numeric bound and its choices, and nothing else.
"""
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import BINARY, ROOT, Server, eventually

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?:^<!-- docs-test: (?P<mark>.*?) -->\n)?^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$", re.M | re.S)
RUN = {"sh", "python", "sql", "toml"}
ENGINES = re.compile(r"^\s*(from|import) (pyiceberg|pyspark|duckdb)\b", re.M)
WARNED = re.compile(r"^.*WARN.*(?:deprecat|will be removed|[Pp]lease explicitly set).*$", re.M)
CURL = 'curl() { command curl --fail-with-body --silent --show-error "$@"; }\n'


def blocks():
    """(file, line, language, mark, body) of every fenced block, in document order."""
    for path in DOCS:
        text = path.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start("body"))
            yield path.relative_to(ROOT), line, m["lang"], m["mark"], m["body"]


def test_every_runnable_block_is_run_or_says_why_not():
    for path, line, lang, mark, _ in blocks():
        if mark is not None:
            assert mark.startswith("not run: ") and len(mark) > len("not run: ") + 10, \
                f"{path}:{line}: a docs-test mark is `not run: <why>`, got {mark!r}"
        assert lang in RUN | {"", "json", "yaml", "text"}, f"{path}:{line}: a ```{lang} block: run it or mark it"


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A directory like the clone the README's commands run in, the demo server started in it."""
    work = tmp_path_factory.mktemp("clone")
    for name in ("build", ".cache", "config", ".venv-engines"):
        (work / name).symlink_to(ROOT / name)
    (work / "sediment.toml").write_text((ROOT / "config" / "demo.toml").read_text())
    (work / "a.parquet").write_bytes(b"PAR1 not really\n")
    (work / "exports").mkdir()
    (work / "exports" / "day1.csv").write_text("a,b\n1,2\n")
    landing = work / "data" / "namespaces" / "landing"
    landing.mkdir(parents=True)
    (landing / "x.csv").write_text("x\n1\n")
    server = Server(["--config", "config/demo.toml", "--data-dir", str(work / "data")], cwd=work)
    # The README's first commands look at the demo's tables: wait for its history to be written.
    eventually(lambda: server.get("/api/v1/datasets/demo/tables/logs").status_code == 200, timeout=60)
    yield work, server
    server.stop()


def localized(body, server):
    """The block with the server's real addresses for Amp's and the README's default ones."""
    ports = {"8000": server.port, "1602": server.query_ports["flight"], "1603": server.query_ports["jsonl"]}
    for default, port in ports.items():
        body = re.sub(rf"\b(127\.0\.0\.1|localhost):{default}\b", f"127.0.0.1:{port}", body)
    return body


def run_block(work, server, env, lang, body):
    """Runs one block; returns (ok, output). `env` is updated with what an sh block exports."""
    body = localized(body, server)
    if lang == "sh":
        env_file = work / ".docs-test-env"
        script = "set -euo pipefail\n" + CURL + body + f"\nenv -0 > {env_file}\n"
        p = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        if p.returncode == 0:
            env.clear()
            env.update(e.split("=", 1) for e in env_file.read_text().split("\0") if "=" in e)
    elif lang == "python":
        venv = ".venv-engines" if ENGINES.search(body) else ".venv"
        p = subprocess.run([str(ROOT / venv / "bin" / "python"), "-c", body], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)
    elif lang == "sql":
        runner = ("import duckdb, sys\ncon = duckdb.connect()\n"
                  "for s in sys.stdin.read().split(';\\n'):\n"
                  "    if s.strip() and not all(l.strip().startswith('--') for l in s.strip().splitlines()):\n"
                  "        r = con.execute(s)\n"
                  "        print(r.fetchall() if r.description else 'ok')\n")
        p = subprocess.run([str(ROOT / ".venv-engines" / "bin" / "python"), "-c", runner], input=body + "\n",
                           cwd=work, env=env, capture_output=True, text=True, timeout=600)
    else:  # toml
        (work / "snippet.toml").write_text(body)
        p = subprocess.run([str(BINARY), "check-config", "--config", "snippet.toml"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=60)
    return p.returncode == 0, p.stdout + p.stderr


def test_every_block_runs_as_written(clone):
    work, server = clone
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    env["SEDIMENT_URL"] = server.url  # the CLI's default server is 127.0.0.1:8000
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env['PATH']}"  # the reader's `aws` (awscli)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # Spark on loopback
    failed = []
    for path, line, lang, mark, body in blocks():
        if lang not in RUN or mark is not None:
            continue
        ok, output = run_block(work, server, env, lang, body)
        if not ok:
            failed.append(f"{path}:{line} ({lang}):\n{output[-3000:]}")
        elif warned := WARNED.findall(output):  # a snippet as written should draw no deprecation warning
            failed.append(f"{path}:{line} ({lang}) runs, with warnings:\n" + "\n".join(warned))
    assert not failed, "blocks that do not run as written:\n\n" + "\n\n".join(failed)


# --- docs/configuration.md against the option table -------------------------------------------------------

SECTION = re.compile(r"^## `\[{1,2}([a-z_.]+)\]{1,2}`", re.M)


def documented():
    """{key: [(default cell, whole row), ...]} of docs/configuration.md's tables (a key may have several rows:
    [[jobs]] has one table per source)."""
    rows, section = {}, None
    for line in (ROOT / "docs" / "configuration.md").read_text().splitlines():
        if m := SECTION.match(line):
            section = m[1]
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if section is None or not line.startswith("| `") or len(cells) < 3:
            continue
        for name in re.findall(r"`([a-z0-9_.]+)`", cells[0]):
            rows.setdefault(f"{section}.{name}", []).append((cells[1], line))
    return rows


def toml_value(text):
    return tomllib.loads("v = " + text)["v"]


def test_configuration_md_states_every_setting_as_the_server_checks_it():
    out = subprocess.run([str(BINARY), "options"], capture_output=True, text=True, check=True).stdout
    options = {o["key"]: o for o in json.loads(out)}
    docs = documented()
    problems = [f"{k}: documented, but the server has no such setting" for k in docs if k not in options]
    for key, o in options.items():
        if key not in docs:
            problems.append(f"{key}: not in docs/configuration.md")
            continue
        for cell, row in docs[key]:
            literal = re.match(r"`([^`]*)`", cell)
            try:
                value = toml_value(literal[1]) if literal else None
            except tomllib.TOMLDecodeError:
                value = None
            if value is None:
                # A default said in words ("(required)", "<data_dir>/range-cache") stands for an empty one.
                if toml_value(o["default"]) not in ("", [], 0):
                    problems.append(f"{key}: the docs' default {cell!r} is not the server's {o['default']}")
            elif value != toml_value(o["default"]):
                problems.append(f"{key}: the docs say the default is {literal[1]}, the server has {o['default']}")
            if o["bound"] and f"({o['bound']})" not in row and f"({o['bound']};" not in row:
                problems.append(f"{key}: its bound ({o['bound']}) is not in its row")
            for choice in o["choices"]:
                if f"`{choice}`" not in row:
                    problems.append(f"{key}: its choice `{choice}` is not in its row")
    assert not problems, "\n".join(problems)
