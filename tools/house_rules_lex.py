"""Lexers for C++ and JavaScript, for tools/house_rules.py: source text into tokens.

Not a parser: enough of each language that string literals and brackets are seen as the compiler
sees them. Comments, string literals (C++ raw strings R"delim(...)delim" and prefixed ones such as
u8"..."; JavaScript template literals with nested ${...}; JavaScript regular expression literals)
and character literals are lexed as whole tokens, so brackets inside them never count. C++ digit
separators (1'000) are part of their number. C++ preprocessor directives are skipped whole, with
their continuation lines; braces that balance only across #if branches would confuse the bracket
matching (it then says where).
"""

import re
from dataclasses import dataclass


@dataclass
class Token:
    kind: str  # "id", "num", "str", "chr", "op"
    text: str  # for "str": the literal's contents, without quotes or prefix
    line: int


def _scanner(punctuators, word):
    """One regular expression that finds what comes next: newline, blanks, comment, word, number, quote or
    punctuator (longest first, so "::" is not read as two ":")."""
    punct = "|".join(re.escape(p) for p in sorted(punctuators.split(), key=len, reverse=True))
    return re.compile(
        rf"(?P<nl>\n)|(?P<ws>[ \t\r\f\v]+)|(?P<cont>\\\r?\n)|(?P<comment>//|/\*)|(?P<word>{word})"
        rf"|(?P<num>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.'])*)|(?P<quote>[\"'`])|(?P<punct>{punct}|.)",
        re.S,
    )


_CPP_SCAN = _scanner("<=> ->* ... :: -> ++ -- << >> <= >= == != && || += -= *= /= %= &= |= ^= ## .*",
                     r"[A-Za-z_][A-Za-z0-9_]*")
_JS_SCAN = _scanner("=== !== **= ... => == != <= >= && || ?? ?. ++ -- += -= *= /= %= &= |= ^= ** << >>",
                    r"[A-Za-z_$][A-Za-z0-9_$]*")
_RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
_STRING_PREFIXES = ("u8", "u", "U", "L")


class _Lexer:
    def __init__(self, src):
        self.src = src
        self.i = 0
        self.line = 1
        self.tokens = []

    def emit(self, kind, text, line):
        self.tokens.append(Token(kind, text, line))

    def advance_to(self, end):
        """Moves to `end`, counting the newlines passed over."""
        self.line += self.src.count("\n", self.i, end)
        self.i = end

    def skip_line_comment(self):
        src, j = self.src, self.i
        while True:  # a backslash at the end of a // comment continues it (C++)
            nl = src.find("\n", j)
            if nl < 0:
                self.advance_to(len(src))
                return
            if src[nl - 1] == "\\" or src[nl - 2 : nl] == "\\\r":
                j = nl + 1
                continue
            self.advance_to(nl)
            return

    def skip_block_comment(self):
        end = self.src.find("*/", self.i + 2)
        self.advance_to(len(self.src) if end < 0 else end + 2)

    def quoted(self, quote, kind, content_start, line):
        """Lexes a '...' or "..." literal whose opening quote is at content_start - 1."""
        src, j = self.src, content_start
        while j < len(src) and src[j] != quote and src[j] != "\n":
            j += 2 if src[j] == "\\" else 1
        self.emit(kind, src[content_start:j], line)
        self.advance_to(min(j + 1, len(src)))


def _merge_adjacent_strings(tokens):
    """"a/" "b/" is one literal "a/b/", as the compiler sees it."""
    out = []
    for t in tokens:
        if t.kind == "str" and out and out[-1].kind == "str":
            out[-1] = Token("str", out[-1].text + t.text, out[-1].line)
        else:
            out.append(t)
    return out


def lex_cpp(src):
    lx = _Lexer(src)
    line_start = True  # only blanks since the last newline: a '#' there starts a directive
    while lx.i < len(src):
        m = _CPP_SCAN.match(src, lx.i)
        kind, text = m.lastgroup, m.group(0)
        if kind == "nl":
            lx.line += 1
            lx.i += 1
            line_start = True
            continue
        if kind in ("ws", "cont"):
            lx.advance_to(m.end())
            continue
        if text == "#" and line_start:
            _skip_directive(lx)
            continue
        line_start = False
        if kind == "comment":
            lx.skip_line_comment() if text == "//" else lx.skip_block_comment()
        elif kind == "word":
            _cpp_word(lx, text, m.end())
        elif kind == "quote" and text != "`":
            lx.quoted(text, "str" if text == '"' else "chr", lx.i + 1, lx.line)
        else:
            lx.emit("num" if kind == "num" else "op", text, lx.line)
            lx.i = m.end()
    return _merge_adjacent_strings(lx.tokens)


def _skip_directive(lx):
    src, j = lx.src, lx.i
    while True:
        nl = src.find("\n", j)
        if nl < 0:
            lx.advance_to(len(src))
            return
        comment, line_comment = src.find("/*", j, nl), src.find("//", j, nl)
        runs_on = comment >= 0 and (line_comment < 0 or comment < line_comment)
        if runs_on and src.find("*/", comment + 2, nl) < 0:  # a block comment that runs on
            end = src.find("*/", comment + 2)
            j = len(src) if end < 0 else end + 2
            continue
        if src[nl - 1] == "\\" or src[nl - 2 : nl] == "\\\r":
            j = nl + 1
            continue
        lx.advance_to(nl)
        return


def _cpp_word(lx, word, end):
    src = lx.src
    nxt = src[end] if end < len(src) else ""
    if word in _RAW_PREFIXES and nxt == '"':
        open_paren = src.find("(", end + 1)
        delim = src[end + 1 : open_paren]
        close = src.find(")" + delim + '"', open_paren + 1)
        if open_paren < 0 or close < 0 or len(delim) > 16:
            raise ValueError(f"line {lx.line}: unterminated raw string literal")
        lx.emit("str", src[open_paren + 1 : close], lx.line)
        lx.advance_to(close + len(delim) + 2)
    elif word in _STRING_PREFIXES and nxt in "\"'":
        lx.quoted(nxt, "str" if nxt == '"' else "chr", end + 1, lx.line)
    else:
        lx.emit("id", word, lx.line)
        lx.i = end


_JS_REGEX_AFTER_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
                         "instanceof", "yield", "await"}


def lex_js(src):
    lx = _Lexer(src)
    while lx.i < len(src):
        m = _JS_SCAN.match(src, lx.i)
        kind, text = m.lastgroup, m.group(0)
        line = lx.line
        if kind in ("nl", "ws", "cont"):
            lx.advance_to(m.end())
        elif kind == "comment":
            lx.skip_line_comment() if text == "//" else lx.skip_block_comment()
        elif text == "`":
            end = _skip_template(src, lx.i)
            lx.emit("str", src[lx.i + 1 : end - 1], line)
            lx.advance_to(end)
        elif kind == "quote":
            lx.quoted(text, "str", lx.i + 1, line)
        elif text == "/" and _regex_may_start(lx.tokens):
            end = _skip_regex(src, lx.i)
            lx.emit("str", src[lx.i : end], line)
            lx.advance_to(end)
        else:
            lx.emit({"word": "id", "num": "num"}.get(kind, "op"), text, line)
            lx.i = m.end()
    return lx.tokens


def _regex_may_start(tokens):
    """A '/' starts a regular expression unless it follows something that ends an operand."""
    if not tokens:
        return True
    t = tokens[-1]
    if t.kind == "id":
        return t.text in _JS_REGEX_AFTER_WORDS
    if t.kind in ("num", "str"):
        return False
    return t.text not in (")", "]", "}", "++", "--")


def _skip_regex(src, i):
    j, in_class = i + 1, False
    while j < len(src) and src[j] != "\n":
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            j += 1
            while j < len(src) and (src[j].isalnum() or src[j] == "_"):
                j += 1  # flags
            return j
        j += 1
    return j


def _skip_quoted(src, i):
    quote, j = src[i], i + 1
    while j < len(src) and src[j] != quote:
        j += 2 if src[j] == "\\" else 1
    return j + 1


def _skip_template(src, i):
    """Returns the index after the template literal that starts at src[i] == '`'."""
    j = i + 1
    while j < len(src):
        c = src[j]
        if c == "\\":
            j += 2
        elif c == "`":
            return j + 1
        elif src.startswith("${", j):
            j = _skip_js_expression(src, j + 2)
        else:
            j += 1
    return j


def _skip_js_expression(src, j):
    """Returns the index after the '}' that closes a template's ${ whose body starts at j."""
    depth = 1
    while j < len(src):
        c = src[j]
        if c in "\"'":
            j = _skip_quoted(src, j)
        elif c == "`":
            j = _skip_template(src, j)
        elif src.startswith("//", j):
            j = src.find("\n", j)
            j = len(src) if j < 0 else j
        elif src.startswith("/*", j):
            end = src.find("*/", j + 2)
            j = len(src) if end < 0 else end + 2
        else:
            depth += c == "{"
            depth -= c == "}"
            j += 1
            if depth == 0:
                return j
    return j


def match_brackets(tokens):
    """Index of the partner of every (, [, { and ), ], }; unbalanced ones are left out."""
    pairs, stack = {}, []
    closers = {")": "(", "]": "[", "}": "{"}
    for i, t in enumerate(tokens):
        if t.kind != "op":
            continue
        if t.text in "([{" and len(t.text) == 1:
            stack.append(i)
        elif t.text in closers:
            if stack and tokens[stack[-1]].text == closers[t.text]:
                j = stack.pop()
                pairs[i], pairs[j] = j, i
            else:
                raise ValueError(f"line {t.line}: unbalanced '{t.text}'")
    if stack:
        raise ValueError(f"line {tokens[stack[-1]].line}: '{tokens[stack[-1]].text}' is never closed")
    return pairs
