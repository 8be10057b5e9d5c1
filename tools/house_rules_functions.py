"""Function bodies in C++ and JavaScript token streams, for tools/house_rules.py.

C++: a function is a `{` block at namespace, class or `extern "C"` level that
  - follows the `)` of a parameter list, after optional qualifiers (const, noexcept[(...)], override,
    final, &, &&, try, [[attributes]]), a trailing return type (`-> T`) or a `requires` clause;
  - or ends a constructor's initializer list (`Foo::Foo(int a) : a_(a), b_{a} {`);
  - or is a lambda's body at that level: `auto kF = [](int x) {...};` is a function named kF, and a
    lambda inside a namespace-level initializer (a table) is named "lambda in <variable>".
Everything inside a function's braces (lambdas, local classes) is part of that function. Other
blocks at that level are namespaces, classes (their functions are named Class::Name) and
initializers (`int x_{0};`, `const Row kRows[] = {...};`), which are data.

JavaScript: a function is a `{` block at module level, in a class body or in an object literal
(or in a block at those levels: if, for, try) that is the body of a function declaration or
expression, an arrow function, or a method; functions nested in it are part of it.

A function's length runs from the line of its name to the line of its closing brace, inclusive.
"""

from dataclasses import dataclass

from house_rules_lex import match_brackets


@dataclass
class Function:
    name: str
    line: int  # the line of its name
    end_line: int  # the line of its closing brace

    @property
    def lines(self):
        return self.end_line - self.line + 1


@dataclass
class _Scope:
    kind: str  # "namespace", "class", "init", "function", "inner"
    name: str = ""  # a class's name, an initializer's variable, a function's name
    line: int = 0  # a function's first line
    stmt: int = 0  # in a namespace or class: where the current declaration starts


# Words before a `(` that make it something other than a parameter list.
_NOT_NAMES = {"if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "alignas", "decltype",
              "noexcept", "throw", "static_assert", "__attribute__", "__declspec", "requires", "typeid", "new",
              "delete", "co_await", "co_return", "co_yield", "void", "int", "char", "bool", "auto"}
_QUALIFIERS = {"const", "volatile", "noexcept", "override", "final", "mutable", "constexpr", "consteval", "try",
               "&", "&&"}
_QUALIFIER_CALLS = {"noexcept", "throw", "__attribute__"}
_TYPE_TOKENS = {"::", "<", ">", ">>", ",", "*", "&", "&&", "const", "volatile"}
_CLASS_KEYS = {"class", "struct", "union"}
_OPERAND_ENDS = {")", "]"}


class _Cpp:
    def __init__(self, tokens):
        self.t = tokens
        self.pairs = match_brackets(tokens)

    def text(self, i):
        return self.t[i].text if 0 <= i < len(self.t) else ""

    def is_op(self, i, text):
        return 0 <= i < len(self.t) and self.t[i].kind == "op" and self.t[i].text == text

    def find_back(self, j, lo, text):
        """The nearest token `text` at or before j at the same depth, not before lo; else None."""
        while j >= lo:
            if self.t[j].text == text and self.t[j].kind in ("op", "id"):
                return j
            if self.t[j].kind == "op" and self.t[j].text in (")", "]", "}"):
                j = self.pairs[j]
            j -= 1
        return None

    def skip_qualifiers(self, j, lo):
        while j >= lo:
            tok = self.t[j]
            if tok.text in _QUALIFIERS and tok.kind in ("id", "op"):
                j -= 1
            elif self.is_op(j, ")") and self.text(self.pairs[j] - 1) in _QUALIFIER_CALLS:
                j = self.pairs[j] - 2
            elif self.is_op(j, "]") and self.is_op(j - 1, "]") and self.is_op(self.pairs[j] + 1, "["):
                j = self.pairs[j] - 1  # [[attribute]]
            else:
                break
        return j

    def skip_angles_back(self, j, lo):
        """j is a '>' (or '>>'); returns the index of the '<' that opens it."""
        depth = 0
        while j >= lo:
            tok = self.t[j]
            if tok.kind == "op" and tok.text in (")", "]", "}"):
                j = self.pairs[j] - 1
                continue
            if tok.kind == "op":
                depth += {">": 1, ">>": 2, "<": -1}.get(tok.text, 0)
            if depth <= 0:
                return j
            j -= 1
        return lo

    def lambda_introducer(self, i, lo):
        """If the `{` at i opens a lambda's body, the index of its `[`; else None."""
        j = i - 1
        k = j
        while k >= lo and (self.t[k].kind == "id" or (self.t[k].kind == "op" and self.t[k].text in _TYPE_TOKENS)):
            k -= 1
        if self.is_op(k, "->"):
            j = k - 1
        j = self.skip_qualifiers(j, lo)
        if self.is_op(j, ")"):
            j = self.pairs[j] - 1
        if not self.is_op(j, "]") or self.is_op(j - 1, "]"):
            return None
        opener = self.pairs[j]
        before = self.t[opener - 1] if opener - 1 >= 0 else None
        if before is not None and (before.kind in ("id", "num", "str") and before.text != "return"):
            return None  # a subscript or an array declarator
        if before is not None and before.kind == "op" and before.text in _OPERAND_ENDS:
            return None
        return opener

    def declarator_paren(self, lo, i):
        """The `)` that ends the parameter list of a function whose body opens at i, or None."""
        arrow = self.find_back(i - 1, lo, "->")
        j = self.skip_qualifiers((arrow if arrow is not None else i) - 1, lo)
        if not (self.is_op(j, ")") or self.is_op(j, "}")):
            requires = self.find_back(j, lo, "requires")  # a trailing requires-clause
            if requires is None:
                return None
            j = self.skip_qualifiers(requires - 1, lo)
        if not (self.is_op(j, ")") or self.is_op(j, "}")):
            return None
        colon = self.find_back(j, lo, ":")  # a constructor's initializer list
        if colon is not None:
            d = self.skip_qualifiers(colon - 1, lo)
            return d if self.is_op(d, ")") else None
        return j if self.is_op(j, ")") else None

    def function_name(self, lo, opener):
        """The (qualified) name before the `(` at opener, and the index of its first token; or None."""
        p = opener - 1
        for q in range(p, max(lo, p - 4) - 1, -1):
            if self.text(q) == "operator":
                name, p = "operator" + "".join(self.t[k].text for k in range(q + 1, opener)), q
                break
        else:
            if self.t[p].text in (">", ">>") and p > lo:
                p = self.skip_angles_back(p, lo) - 1
            if p < lo or self.t[p].kind != "id" or self.t[p].text in _NOT_NAMES:
                return None
            name = self.t[p].text
            if self.is_op(p - 1, "~"):
                name, p = "~" + name, p - 1
        while p - 2 >= lo and self.is_op(p - 1, "::"):
            q = p - 2
            if self.t[q].text in (">", ">>"):
                q = self.skip_angles_back(q, lo) - 1
            if q < lo or self.t[q].kind != "id":
                break
            name, p = self.t[q].text + "::" + name, q
        if name.isupper() and name.replace("_", "").isalnum():  # TEST(Suite, Name) and kin
            args = [self.t[k].text for k in range(opener + 1, self.pairs[opener]) if self.t[k].kind == "id"]
            name = f"{name}({', '.join(args)})"
        return name, p

    def template_end(self, lo, i):
        """Skips `template <...>` headers at lo; returns the first index after them."""
        k = lo
        while self.text(k) == "template" and self.is_op(k + 1, "<"):
            depth, k = 0, k + 1
            while k < i:
                if self.t[k].kind == "op":
                    depth += {"<": 1, ">": -1, ">>": -2}.get(self.t[k].text, 0)
                    if self.t[k].text in ("(", "["):
                        k = self.pairs[k]
                k += 1
                if depth <= 0:
                    break
        return k

    def variable(self, lo, i):
        """The name a declaration from lo to i declares: the identifier before its first `=`, `{` or `(`."""
        j, last = lo, None
        while j < i:
            tok = self.t[j]
            if tok.kind == "op" and tok.text in ("=", "{", "("):
                break
            if tok.kind == "op" and tok.text == "[":
                j = self.pairs[j]
            elif tok.kind == "id":
                last = j
            j += 1
        return (self.t[last].text, last) if last is not None else ("(anonymous)", i)

    def class_name(self, key, i):
        name = "(anonymous)"
        j = key + 1
        while j < i:
            tok = self.t[j]
            if tok.kind == "op" and tok.text in (":", "<", "{"):
                break
            if tok.kind == "op" and tok.text in ("(", "["):
                j = self.pairs[j]
            elif tok.kind == "id" and tok.text != "final":
                name = tok.text
            j += 1
        return name

    def classify(self, scope, i):
        """What the `{` at i opens, in a namespace or class scope: (kind, name, index of the name)."""
        lo = scope.stmt
        if self.lambda_introducer(i, lo) is not None:
            name, at = self.variable(lo, i)
            return "function", name, at
        d = self.declarator_paren(lo, i)
        if d is not None:
            found = self.function_name(lo, self.pairs[d])
            if found is not None:
                return "function", found[0], found[1]
        head = self.template_end(lo, i)
        words = []
        j = head
        while j < i:
            if self.t[j].kind == "op" and self.t[j].text in ("(", "["):
                j = self.pairs[j]
            else:
                words.append(j)
            j += 1
        texts = [self.t[k].text for k in words]
        if "namespace" in texts or (texts[:1] == ["extern"] and len(words) > 1 and self.t[words[1]].kind == "str"):
            return "namespace", "", i
        equals = texts.index("=") if "=" in texts else len(texts)
        for n, text in enumerate(texts[:equals]):
            if text == "enum":
                break
            if text in _CLASS_KEYS:
                return "class", self.class_name(words[n], i), words[n]
        name, at = self.variable(lo, i)
        return "init", name, at


def cpp_functions(tokens):
    """Every function body in a C++ token stream (see the module's comment)."""
    cpp = _Cpp(tokens)
    found = []
    stack = [_Scope("namespace")]
    for i, tok in enumerate(tokens):
        if tok.kind != "op" or tok.text not in ("{", "}", ";", ":"):
            continue
        scope = stack[-1]
        if tok.text == "{":
            stack.append(_open_cpp(cpp, stack, i))
        elif tok.text == "}":
            done = stack.pop()
            if done.kind == "function":
                found.append(Function(done.name, done.line, tok.line))
            if stack[-1].kind in ("namespace", "class") and done.kind != "init":
                stack[-1].stmt = i + 1
        elif scope.kind in ("namespace", "class") and (
            tok.text == ";" or cpp.text(i - 1) in ("public", "private", "protected")
        ):
            scope.stmt = i + 1
    return found


def _open_cpp(cpp, stack, i):
    scope = stack[-1]
    if scope.kind in ("function", "inner"):
        return _Scope("inner")
    if scope.kind == "init":
        if cpp.lambda_introducer(i, 0) is not None:
            return _Scope("function", f"lambda in {scope.name}", cpp.t[i].line)
        return _Scope("init", scope.name)
    kind, name, at = cpp.classify(scope, i)
    if kind == "function" and "::" not in name:
        classes = [s.name for s in stack if s.kind == "class"]
        name = "::".join(classes + [name])
    return _Scope(kind, name, cpp.t[at].line if at < len(cpp.t) else cpp.t[i].line, i + 1)


_JS_NOT_NAMES = {"if", "for", "while", "switch", "catch", "with", "await", "return", "typeof"}
_JS_METHOD_WORDS = {"get", "set", "static", "async"}


class _Js:
    def __init__(self, tokens):
        self.t = tokens
        self.pairs = match_brackets(tokens)

    def text(self, i):
        return self.t[i].text if 0 <= i < len(self.t) else ""

    def assigned_name(self, k):
        """The name in `name = <k...>` or `name: <k...>` (k the token after '=' or ':'), or None."""
        if self.text(k - 1) == "async":
            k -= 1
        if self.text(k - 1) in ("=", ":") and k - 2 >= 0 and self.t[k - 2].kind in ("id", "str"):
            return self.t[k - 2].text, k - 2
        return None

    def head(self, i):
        """If the `{` at i opens a function's body: (name, index of the name); else None."""
        j = i - 1
        if self.text(j) == "=>":
            k = self.pairs[j - 1] if self.text(j - 1) == ")" else j - 1
            return self.assigned_name(k) or ("(arrow function)", j)
        if self.text(j) != ")" or self.t[j].kind != "op":
            return None
        p = self.pairs[j] - 1
        if p < 0:
            return None
        word = self.t[p]
        if word.kind == "id" and word.text in _JS_NOT_NAMES:
            return None
        if word.text == "function" or (word.text == "*" and self.text(p - 1) == "function"):
            start = p if word.text == "function" else p - 1
            return self.assigned_name(start) or ("(function)", p)
        if word.kind in ("id", "str") or word.text == "]":
            if word.text == "]":
                p = self.pairs[p]
            return word.text if word.text != "]" else "[computed]", p
        return None

    def class_name(self, i):
        for k in range(i - 1, max(-1, i - 8), -1):
            if self.text(k) == "class":
                name = self.text(k + 1)
                return name if self.t[k + 1].kind == "id" and name != "extends" else "(class)"
        return None


def js_functions(tokens):
    """Every outermost function body in a JavaScript token stream (see the module's comment)."""
    js = _Js(tokens)
    found = []
    stack = [_Scope("block")]
    for i, tok in enumerate(tokens):
        if tok.kind != "op" or tok.text not in ("{", "}"):
            continue
        if tok.text == "}":
            done = stack.pop()
            if done.kind == "function":
                found.append(Function(done.name, done.line, tok.line))
            continue
        if stack[-1].kind in ("function", "inner"):
            stack.append(_Scope("inner"))
            continue
        head = js.head(i)
        if head is None:
            stack.append(_Scope("block", js.class_name(i) or ""))
            continue
        name, at = head
        classes = [s.name for s in stack if s.kind == "block" and s.name]
        stack.append(_Scope("function", ".".join(classes + [name]), tokens[at].line))
    return found
