"""The doc-path rule of tools/house_rules.py: every path docs/architecture.md names exists.

A backticked token names a path when it ends in a file extension (.h, .cc, .md, .py, .js, .sh, ...),
ends in '/' (a directory, like a room `http/`), or starts with one of the repository's top-level
directories (`src/table`). Tokens with placeholders or spaces (`src/<module>`, `t/lease/...`,
`POST .../compact`), URL paths (`/api/`) and KV keys without an extension are not paths. A `*` is a
glob that must match something. The specs (`spec/...`) live outside the repository and are skipped.
Relative Markdown links ([x](compaction.md)) must exist beside the page.

Tokens resolve as a reader resolves them:
- in the file column of a unit table under a heading "### `src/<module>`", relative to that module
  (and, in the server's table, to the room in the room column: `http/` + `errors.h`), and nowhere else;
- elsewhere, relative to the repository's root, to src/, to the module of the bullet they are in
  (`- **catalog**: ...`, `- **table/registry**: ...`) or of the section; failing those, a bare file
  name may be any file of that name in the tree, and a path any file whose path ends in it.
"""

import fnmatch
import os
import re

_EXTENSION = re.compile(r"\.(h|cc|md|py|js|sh|toml|txt|json|css|html|yaml|yml|in)$")
_NOT_PATH = re.compile(r"[\s<>{}\[\]?=…]|\.\.\.|^/")
_SECTION = re.compile(r"^#+\s+`(src/[^`]+?)/?`")
_BULLET = re.compile(r"^\s*[-*] \*\*([a-z_]+)(?:/[a-z_]+)?\*\*")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
_SKIP_DIRS = {".git", ".venv", ".cache", "node_modules", "__pycache__", ".pytest_cache"}
EXTERNAL = ("spec/",)  # the specs Sediment implements, kept outside the repository


def _tree_paths(root):
    """Every file and directory of the repository, relative and in POSIX form (no build output)."""
    files, dirs = [], set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not (rel == "" and d.startswith("build"))]
        dirs.update(rel + d for d in dirnames)
        files.extend(rel + f for f in filenames)
    return files, dirs


class _Resolver:
    def __init__(self, root):
        self.files, self.dirs = _tree_paths(root)
        self.all = set(self.files) | self.dirs
        self.top = {p for p in self.all if "/" not in p}

    def exists(self, path):
        path = os.path.normpath(path).replace(os.sep, "/") if path else path
        if "*" in path:
            return any(fnmatch.fnmatchcase(p, path) for p in self.all)
        return path in self.all

    def anywhere(self, token):
        """Whether any file or directory is `token` or ends in "/" + `token` (a glob if it has '*')."""
        token = token.rstrip("/")
        return any(fnmatch.fnmatchcase(p, token) or fnmatch.fnmatchcase(p, "*/" + token) for p in self.all)

    def names_path(self, token):
        if _NOT_PATH.search(token) or token.startswith(EXTERNAL) or _KV_KEY.match(token):
            return False
        if _EXTENSION.search(token) or token.endswith("/"):
            return True
        return "/" in token and token.split("/", 1)[0] in self.top


# A KV key or prefix (t/seg/..., c/ar/...): the stores' layout, not a file.
_KV_KEY = re.compile(r"^[acjt]/[a-z_]+/")


def _cells(line):
    """A Markdown table row's cells; a '|' inside backticks does not split."""
    cells, cell, code = [], "", False
    for c in line.strip().strip("|"):
        if c == "`":
            code = not code
        if c == "|" and not code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += c
    cells.append(cell.strip())
    return cells


def _tokens(text):
    return re.findall(r"`([^`]+)`", text)


class _Reader:
    """Walks the page line by line, keeping what a reader keeps in mind: section, table, room, bullet."""

    def __init__(self, resolver, doc):
        self.r = resolver
        self.doc = doc
        self.section = None  # "src/<module>" under such a heading
        self.columns = None  # the current table's header, lower case
        self.room = ""
        self.bullet = None  # "src/<module>" of the current bullet
        self.findings = []
        self.checked = 0

    def check(self, n, token, strict_base=None, bases=()):
        token = token.strip()
        if not self.r.names_path(token):
            return
        self.checked += 1
        if strict_base is not None:
            if not self.r.exists(f"{strict_base}/{token}"):
                self.missing(n, token, f"{strict_base}/{token.rstrip('/')}")
            return
        candidates = [token, "src/" + token] + [f"{b}/{token}" for b in bases if b]
        if not any(self.r.exists(c) for c in candidates) and not self.r.anywhere(token):
            self.missing(n, token, None)

    def missing(self, n, token, read_as):
        where = f" (read as {read_as})" if read_as else ""
        self.findings.append((n, token, f"`{token}`{where} does not exist: correct the path or the page"))

    def heading(self, n, line):
        m = _SECTION.match(line)
        self.section = m.group(1) if m else None
        self.columns, self.room, self.bullet = None, "", None
        for token in _tokens(line):
            self.check(n, token)

    def row(self, n, line):
        cells = _cells(line)
        if self.columns is None:
            self.columns = [c.lower() for c in cells]
            return
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            return
        if "room" in self.columns and self.columns.index("room") < len(cells):
            room = _tokens(cells[self.columns.index("room")])
            self.room = room[0].strip("/") if room else self.room
        base = "/".join(p for p in (self.section, self.room) if p)
        for column, cell in zip(self.columns, cells):
            strict = base if column == "file" and self.section else None
            for token in _tokens(cell):
                self.check(n, token, strict, (base, self.section, self.bullet))

    def text(self, n, line):
        self.columns, self.room = None, ""
        m = _BULLET.match(line)
        if m:
            self.bullet = "src/" + m.group(1)
        elif not line.strip() or re.match(r"^\s*[-*] ", line):
            self.bullet = None
        for token in _tokens(line):
            self.check(n, token, None, (self.bullet, self.section))


def missing_doc_paths(root, doc):
    """(line, token, detail) for every missing path `doc` names, and how many paths it names."""
    if not (root / doc).is_file():
        return [(1, doc, f"{doc} is missing")], 0
    reader = _Reader(_Resolver(root), doc)
    in_code_block = False
    for n, line in enumerate((root / doc).read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_code_block = not in_code_block
            continue
        if in_code_block:
            continue
        if line.startswith("#"):
            reader.heading(n, line)
        elif line.startswith("|"):
            reader.row(n, line)
        else:
            reader.text(n, line)
        for target in _LINK.findall(line):
            if "://" in target or target.startswith("mailto:"):
                continue
            reader.checked += 1
            path = os.path.normpath(os.path.join(os.path.dirname(doc), target)).replace(os.sep, "/")
            if not reader.r.exists(path):
                reader.findings.append((n, target, f"link to {target} (read as {path}) does not exist"))
    return reader.findings, reader.checked
