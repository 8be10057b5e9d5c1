#!/usr/bin/env python3
"""Checks the house rules that scripts/test.sh enforces before it builds (docs/building.md, "House
rules the test command checks"). Standard library only; about a second on this tree.

  file-lines      a non-test source file over 600 lines (C++ .h/.cc under src/, .js under console/)
  function-lines  a function over 80 lines in those files, unless the allow-list names it as a
                  data table (a route, option or column table) with a reason
  kv-key          a KV key literal in C++ outside its module's key file, src/<module>/keys.h or keys.cc
  doc-path        a path named in docs/architecture.md that does not exist

Test code is exempt from all but doc-path: files named *_test.cc, *_test.h, *_testing.h,
*_testing.cc, files that include GoogleTest, and files that include those (base/test_util.cc,
kv/kv_conformance.cc). Python (tests/, bench/, tools/) is not checked.

tools/house_rules_allow.toml is the one allow-list: `data_tables` (permanent, each with a reason)
and `debt` (violations issue 43 is removing; an entry that no longer matches is reported, so the
list only shrinks). Usage: tools/house_rules.py [ROOT]; exits 1 and lists `path:line: rule: detail`
for every finding.
"""

import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from house_rules_docs import missing_doc_paths  # noqa: E402
from house_rules_functions import cpp_functions, js_functions  # noqa: E402
from house_rules_lex import lex_cpp, lex_js  # noqa: E402

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
ALLOW_LIST = "tools/house_rules_allow.toml"
DOC = "docs/architecture.md"
RULES = ("file-lines", "function-lines", "kv-key", "doc-path")

_TEST_NAME = re.compile(r"(_test\.(cc|h)|_testing\.(cc|h))$")
_GTEST_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](gtest|gmock)/', re.M)
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)

# The KV namespaces (a key's first component) and the module that owns each; the longest prefix
# wins ("c/ar/" is the actions module's runs, inside the catalog's namespace so that a repository's
# keys share one prefix family).
KV_OWNERS = {"a/": "auth", "c/": "catalog", "c/ar/": "actions", "ice/": "iceberg_tables", "j/": "chain", "t/": "table"}
# A KV key literal: a string literal that starts with a known namespace, or that has the shape of a
# key prefix (a namespace of 1-4 letters, a record kind of 1-8, each ending in '/'), which catches a
# new namespace. "text/plain" or "application/json" have no second '/' or too long a first part.
_KV_LITERAL = re.compile(r"(?:[actj]/|ice/|[a-z]{1,4}/[a-z_]{1,8}/)")
_KV_PREFIX = re.compile(r"[a-z]{1,4}/[a-z_]*/?")
_KEY_FILE = re.compile(r"^src/([a-z_]+)/keys\.(h|cc)$")


@dataclass
class Finding:
    path: str
    line: int
    rule: str
    detail: str
    key: tuple = ()  # what an allow-list entry names to cover it
    size: int = 0  # lines, for file-lines and function-lines

    def __str__(self):
        return f"{self.path}:{self.line}: {self.rule}: {self.detail}"


@dataclass
class Tree:
    root: Path
    sources: list = field(default_factory=list)  # repo-relative C++ and JS sources
    texts: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    tests: set = field(default_factory=set)

    def read(self, rel):
        if rel not in self.texts:
            self.texts[rel] = (self.root / rel).read_text(encoding="utf-8", errors="replace")
        return self.texts[rel]

    def lex(self, rel):
        """The file's tokens (ValueError if the lexer cannot follow it)."""
        if rel not in self.tokens:
            self.tokens[rel] = (lex_js if rel.endswith(".js") else lex_cpp)(self.read(rel))
        return self.tokens[rel]


def scan_tree(root):
    tree = Tree(root)
    for base, exts in (("src", (".h", ".cc")), ("console", (".js",))):
        for dirpath, dirnames, filenames in os.walk(root / base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(exts):
                    tree.sources.append((Path(dirpath) / name).relative_to(root).as_posix())
    tree.tests = _test_files(tree)
    return tree


def _test_files(tree):
    """Files named as tests, files that include GoogleTest, and files that include any of those."""
    cpp = [f for f in tree.sources if f.startswith("src/")]
    tests = {f for f in cpp if _TEST_NAME.search(f) or _GTEST_INCLUDE.search(tree.read(f))}
    includes = {f: {"src/" + inc for inc in _QUOTED_INCLUDE.findall(tree.read(f))} for f in cpp}
    grew = True
    while grew:
        more = {f for f in cpp if f not in tests and includes[f] & tests}
        tests |= more
        grew = bool(more)
    return tests


def line_count(text):
    return len(text.splitlines())


def file_findings(tree):
    out = []
    for f in tree.sources:
        if f in tree.tests:
            continue
        n = line_count(tree.read(f))
        if n > MAX_FILE_LINES:
            detail = f"{n} lines, over {MAX_FILE_LINES}: split it by what its parts do"
            out.append(Finding(f, 1, "file-lines", detail, ("file-lines", f), n))
    return out


def function_findings(tree, counts):
    out = []
    for f in tree.sources:
        if f in tree.tests:
            continue
        try:
            functions = (js_functions if f.endswith(".js") else cpp_functions)(tree.lex(f))
        except ValueError as e:  # the lexer or bracket matching could not follow the file
            out.append(Finding(f, 1, "function-lines", f"cannot find its functions: {e}", ("unreadable", f)))
            continue
        counts["functions"] += len(functions)
        for fn in functions:
            if fn.lines > MAX_FUNCTION_LINES:
                detail = f"{fn.name} is {fn.lines} lines, over {MAX_FUNCTION_LINES}"
                out.append(Finding(f, fn.line, "function-lines", detail, ("function-lines", f, fn.name), fn.lines))
    return out


def kv_owner(literal):
    best = ""
    for prefix in KV_OWNERS:
        if literal.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return KV_OWNERS.get(best)


def kv_findings(tree, counts):
    out = []
    for f in tree.sources:
        if not f.startswith("src/") or f in tree.tests:
            continue
        key_file = _KEY_FILE.match(f)
        try:
            tokens = tree.lex(f)
        except ValueError:
            continue  # function_findings reports it
        for tok in tokens:
            if tok.kind != "str" or not _KV_LITERAL.match(tok.text):
                continue
            counts["kv literals"] += 1
            prefix = _KV_PREFIX.match(tok.text).group(0)
            owner = kv_owner(tok.text)
            if key_file and owner in (None, key_file.group(1)):
                continue
            if key_file and re.fullmatch(r"[a-z]{1,4}/", tok.text):
                continue  # one segment inside a module's own key (actions' runs under "c/ar/<repo>/t/")
            if key_file:
                detail = f'"{prefix}" belongs to module {owner}: build it in src/{owner}/keys.h, not here'
            else:
                home = f"src/{owner}/keys.h" if owner else "its module's keys.h"
                detail = f'KV key literal "{tok.text}" outside a key file: build it in {home}'
            out.append(Finding(f, tok.line, "kv-key", detail, ("kv-key", f, prefix)))
    return out


@dataclass
class AllowList:
    data_tables: list
    debt: list
    problems: list  # findings about the allow-list itself
    lines: list  # its text, for entry line numbers


_ENTRY_KEYS = {
    "file-lines": ({"issue", "rule", "file"}, {"lines"}),
    "function-lines": ({"issue", "rule", "file", "function"}, {"lines"}),
    "kv-key": ({"issue", "rule", "file", "prefix"}, set()),
    "doc-path": ({"issue", "rule", "file", "path"}, set()),
}


def _strings(entry, skip=()):
    """Whether every field but `skip` is a non-empty string."""
    return all(isinstance(v, str) and v.strip() for k, v in entry.items() if k not in skip)


def entry_key(entry):
    rule = entry["rule"]
    named = {"file-lines": (), "function-lines": ("function",), "kv-key": ("prefix",), "doc-path": ("path",)}[rule]
    return (rule, entry["file"]) + tuple(entry[k] for k in named)


def entry_line(allow, entry):
    """The allow-list line that holds an entry: the first with all its fields (but the reason) as written."""
    if not isinstance(entry, dict):
        return 1
    fields = [f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in entry.items() if k != "reason"]
    for n, text in enumerate(allow.lines, 1):
        if all(f in text for f in fields):
            return n
    return 1


def load_allow_list(root):
    path = root / ALLOW_LIST
    if not path.is_file():
        missing = Finding(ALLOW_LIST, 1, "allow-list", "missing (an empty one: data_tables = [], debt = [])")
        return AllowList([], [], [missing], [])
    text = path.read_text(encoding="utf-8")
    allow = AllowList([], [], [], text.splitlines())
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        allow.problems.append(Finding(ALLOW_LIST, 1, "allow-list", f"not valid TOML: {e}"))
        return allow
    for extra in sorted(set(data) - {"data_tables", "debt"}):
        allow.problems.append(Finding(ALLOW_LIST, 1, "allow-list", f"unknown section {extra!r}"))
    for entry in data.get("data_tables", []):
        if not isinstance(entry, dict) or set(entry) != {"file", "function", "reason"} or not _strings(entry):
            allow.problems.append(Finding(ALLOW_LIST, entry_line(allow, entry), "allow-list",
                                          "a data table needs exactly a file, a function and a reason"))
        else:
            allow.data_tables.append(entry)
    for entry in data.get("debt", []):
        rule = entry.get("rule") if isinstance(entry, dict) else None
        required, optional = _ENTRY_KEYS.get(rule, (None, None))
        if (required is None or not required <= set(entry) <= required | optional or entry.get("issue") != 43
                or not isinstance(entry.get("lines", 0), int) or not _strings(entry, skip=("issue", "lines"))):
            allow.problems.append(Finding(ALLOW_LIST, entry_line(allow, entry), "allow-list",
                                          f"a debt entry needs issue = 43, a rule of {', '.join(RULES)}, "
                                          "and that rule's fields (see the file's header)"))
        else:
            allow.debt.append(entry)
    return allow


def apply_allow_list(findings, allow):
    """The findings no entry covers, plus the entries that cover nothing (or less than they grew)."""
    tables = {("function-lines", e["file"], e["function"]): e for e in allow.data_tables}
    debts = {}
    for e in allow.debt:
        debts.setdefault(entry_key(e), e)
    used = set()
    left = []
    for f in findings:
        entry = tables.get(f.key)
        if entry is None:
            entry = debts.get(f.key)
            if entry is not None and "lines" in entry and f.size > entry["lines"]:
                f.detail += f"; grew past the {entry['lines']} its debt entry in {ALLOW_LIST} allows"
                left.append(f)
        if entry is None:
            left.append(f)
        else:
            used.add(id(entry))
    for e in allow.data_tables:
        if id(e) not in used:
            left.append(Finding(ALLOW_LIST, entry_line(allow, e), "stale-allow",
                                f"{e['file']}: {e['function']} is no data table over {MAX_FUNCTION_LINES} "
                                "lines now: remove the entry"))
    for e in allow.debt:
        if id(e) not in used:
            what = " ".join(str(v) for v in entry_key(e)[1:])
            left.append(Finding(ALLOW_LIST, entry_line(allow, e), "stale-debt",
                                f"{e['rule']} {what} no longer violates: remove the entry"))
    return left + allow.problems


def check(root):
    """Returns (findings left after the allow-list, summary counts)."""
    root = Path(root)
    tree = scan_tree(root)
    counts = {"files": len(tree.sources), "tests": len(tree.tests), "functions": 0, "kv literals": 0}
    findings = file_findings(tree)
    findings += function_findings(tree, counts)
    findings += kv_findings(tree, counts)
    missing, counts["doc paths"] = missing_doc_paths(root, DOC)
    findings += [Finding(DOC, n, "doc-path", detail, ("doc-path", DOC, token)) for n, token, detail in missing]
    allow = load_allow_list(root)
    counts["data tables"] = len(allow.data_tables)
    counts["debt"] = len(allow.debt)
    return apply_allow_list(findings, allow), counts


def report_order(finding):
    return finding.path, finding.line, finding.rule, finding.detail


def main(argv):
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    left, counts = check(root)
    if left:
        for f in sorted(left, key=report_order):
            print(f)
        print(f"house rules: {len(left)} finding(s). Fix them (docs/building.md, \"House rules the test command "
              f"checks\"); a data table over {MAX_FUNCTION_LINES} lines may instead be listed with a reason in "
              f"{ALLOW_LIST}.")
        return 1
    print(f"house rules: ok ({counts['files'] - counts['tests']} source files and {counts['functions']} functions "
          f"outside tests, {counts['kv literals']} KV key literals, {counts['doc paths']} paths in {DOC}); "
          f"allow-list: {counts['data tables']} data tables, {counts['debt']} debt entries of issue 43 left")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
