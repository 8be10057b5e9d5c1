"""tools/house_rules.py on fabricated sources: the lexers and function finders on tricky C++ and
JavaScript, and each rule, the allow-list and the report on a small tree in a temporary directory.
No server; a fraction of a second."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))

import house_rules  # noqa: E402
from house_rules_functions import cpp_functions, js_functions  # noqa: E402
from house_rules_lex import lex_cpp, lex_js  # noqa: E402


def cpp(src):
    return {f.name: (f.line, f.lines) for f in cpp_functions(lex_cpp(textwrap.dedent(src)))}


def js(src):
    return {f.name: (f.line, f.lines) for f in js_functions(lex_js(textwrap.dedent(src)))}


def test_braces_in_strings_comments_and_directives_do_not_count():
    found = cpp(r'''
        #define OPEN {  \
          if (x) {
        // a comment { with a brace \
           continued {
        /* { */
        int Alpha() {
          const char* raw = R"delim(}" ) } )delim";
          const char* raw2 = u8R"(})";
          const char* s = "}\"{";
          char c = '}', q = '"', e = '\'';
          int big = 1'000'000;
          return '{';
        }
        int Beta() { return 0; }
        ''')
    assert found == {"Alpha": (7, 8), "Beta": (15, 1)}


def test_lambdas_and_local_classes_are_part_of_their_function():
    found = cpp('''
        namespace a::b {
        void Outer(int x) {
          auto f = [&](int y) -> int {
            struct Local { int g() { return 1; } };
            return y;
          };
          std::function<void()> h = [] {};
        }
        }  // namespace a::b
        ''')
    assert found == {"Outer": (3, 7)}


def test_members_constructors_operators_and_qualifiers():
    found = cpp('''
        template <typename T>
        class Box : public Base<T> {
         public:
          Box() : a_{1}, b_(2) {}
          explicit Box(int a) noexcept(true) : a_(a) {
          }
          int get() const override { return a_; }
          bool operator==(const Box& o) const { return a_ == o.a_; }
          int operator()(int x) && { return x; }
          auto Late() -> std::vector<std::pair<int, int>> { return {}; }
          ~Box() {}
          struct Inner {
            void Deep() {}
          };
         private:
          int a_{0};
          std::function<void(int)> cb_{nullptr};
          int b_ = 0;
        };
        Box<int>::Box(const char* s) : Box(1) { }
        template <typename T> T Max(T a, T b) requires std::integral<T> { return a; }
        template <typename T> requires std::integral<T> T Min(T a, T b) { return b; }
        ''')
    assert found == {
        "Box::Box": (21, 1),  # the last definition of the name wins in this dict
        "Box::get": (8, 1),
        "Box::operator==": (9, 1),
        "Box::operator()": (10, 1),
        "Box::Late": (11, 1),
        "Box::~Box": (12, 1),
        "Box::Inner::Deep": (14, 1),
        "Max": (22, 1),
        "Min": (23, 1),
    }


def test_data_at_namespace_level_is_not_a_function_but_its_lambdas_are():
    found = cpp('''
        enum class Kind : int { kA, kB };
        struct Row { const char* name; int (*fn)(int); };
        const Row kRows[] = {
            {"a", nullptr},
            {"b", [](int x) {
               return x;
             }},
        };
        const auto kTwice = [](int x) {
          return 2 * x;
        };
        static const std::map<int, int> kMap({{1, 2}});
        extern "C" {
        int CFunction(void) { return 0; }
        }
        ''')
    assert found == {"lambda in kRows": (6, 3), "kTwice": (10, 3), "CFunction": (15, 1)}


def test_macros_and_attributes_around_declarations():
    found = cpp('''
        SEDIMENT_DECLARE_FLAG(verbose)
        int AfterAMacro() { return 0; }
        class ARROW_EXPORT Exported final : public Base {
          [[nodiscard]] int Get() const noexcept { return 1; }
        };
        struct alignas(64) Padded {
          void Touch() {}
        };
        ''')
    assert found == {"AfterAMacro": (3, 1), "Exported::Get": (5, 1), "Padded::Touch": (8, 1)}


def test_a_test_macro_is_named_with_its_arguments():
    assert cpp("TEST_F(MergeTest, CopiesRowGroups) {\n}\n") == {"TEST_F(MergeTest, CopiesRowGroups)": (1, 2)}


def test_unbalanced_braces_say_where():
    with pytest.raises(ValueError, match="line 1: '{' is never closed"):
        cpp_functions(lex_cpp("int f() {\n  {\n}\n"))
    with pytest.raises(ValueError, match="line 3: unbalanced '}'"):
        cpp_functions(lex_cpp("int f() {\n}\n}\n"))


def test_javascript_functions():
    found = js(r'''
        import { a } from "./app.js";
        const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
        export async function page(main, { life, next = "}" }) {
          const re = /[{}]/g, half = 4 / 2;
          const html = `<b>${items.map((x) => { return `{${x}}`; }).join("")}</b>`;
          function inner() {
            return 1;
          }
          return re;
        }
        const handler = async (e) => {
          if (e) {
            return;
          }
        };
        class Widget extends Base {
          constructor() {
            super();
          }
          render() { return 1; }
        }
        if (x) {
          document.addEventListener("click", () => {
          });
        }
        ''')
    assert found == {
        "page": (4, 8),
        "handler": (12, 5),
        "Widget.constructor": (18, 3),
        "Widget.render": (21, 1),
        "(arrow function)": (24, 2),
    }


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def long_function(name, lines):
    return f"int {name}() {{\n" + "  x();\n" * (lines - 2) + "}\n"


@pytest.fixture
def tree(tmp_path):
    """A small tree that passes: a module table in architecture.md, one key file, an empty allow-list."""
    write(tmp_path, "src/table/registry.cc", '#include "table/keys.h"\nint Ok() { return 0; }\n')
    write(tmp_path, "src/table/keys.h", 'inline std::string SegKey() { return "t/seg/"; }\n')
    write(tmp_path, "src/server/http/errors.h", "int Code();\n")
    write(tmp_path, "console/app.js", "function go() {\n}\n")
    write(tmp_path, "docs/other.md", "# Other\n")
    write(tmp_path, "docs/architecture.md", '''\
        # Architecture
        See [other](other.md) and `spec/parquet-compaction.md`, keys like `t/seg/<id>` or `c/m/r/main`.

        ### `src/table`

        | file | job |
        | --- | --- |
        | `registry.cc`, `keys.h` | the registry; keys `t/seg/...` |

        ### `src/server`

        | room | file | job |
        | --- | --- | --- |
        | `http/` | `errors.h` | codes; also `server/http/errors.h` and `console/*.js` |
        ''')
    write(tmp_path, house_rules.ALLOW_LIST, "data_tables = []\ndebt = []\n")
    return tmp_path


def findings(root):
    """The report's lines, in its order."""
    left, _ = house_rules.check(root)
    return [str(f) for f in sorted(left, key=house_rules.report_order)]


def test_a_clean_tree_passes(tree):
    assert findings(tree) == []


def test_file_and_function_lengths(tree):
    write(tree, "src/table/big.cc", long_function("Big", 81) + "\n" * 530)
    write(tree, "src/table/big_test.cc", long_function("Big", 200) + "\n" * 700)
    write(tree, "src/table/fixture_internal.h", "#include <gtest/gtest.h>\n" + long_function("F", 100))
    write(tree, "src/table/fixture.cc", '#include "table/fixture_internal.h"\n' + long_function("G", 100))
    write(tree, "console/big.js", "function ok() {\n}\n" * 301)
    assert findings(tree) == [
        "console/big.js:1: file-lines: 602 lines, over 600: split it by what its parts do",
        "src/table/big.cc:1: file-lines: 611 lines, over 600: split it by what its parts do",
        "src/table/big.cc:1: function-lines: Big is 81 lines, over 80",
    ]


def test_the_allow_list(tree):
    write(tree, "src/table/big.cc", long_function("Table", 90) + long_function("Debt", 85) + long_function("Grew", 90))
    write(tree, "src/table/small.cc", "int Small() {\n}\n")
    write(tree, house_rules.ALLOW_LIST, '''\
        data_tables = [
          { file = "src/table/big.cc", function = "Table", reason = "rows" },
          { file = "src/table/small.cc", function = "Small", reason = "rows" },
        ]
        debt = [
          { issue = 43, rule = "function-lines", file = "src/table/big.cc", function = "Debt", lines = 85 },
          { issue = 43, rule = "function-lines", file = "src/table/big.cc", function = "Grew", lines = 85 },
          { issue = 43, rule = "file-lines", file = "src/table/small.cc", lines = 700 },
          { issue = 43, rule = "kv-key", file = "src/table/registry.cc", prefix = "t/seg/" },
          { issue = 44, rule = "file-lines", file = "src/table/small.cc" },
        ]
        ''')
    allow = house_rules.ALLOW_LIST
    assert findings(tree) == [
        "src/table/big.cc:176: function-lines: Grew is 90 lines, over 80; grew past the 85 its debt entry in "
        f"{allow} allows",
        f"{allow}:3: stale-allow: src/table/small.cc: Small is no data table over 80 lines now: remove the entry",
        f"{allow}:8: stale-debt: file-lines src/table/small.cc no longer violates: remove the entry",
        f"{allow}:9: stale-debt: kv-key src/table/registry.cc t/seg/ no longer violates: remove the entry",
        f"{allow}:10: allow-list: a debt entry needs issue = 43, a rule of file-lines, function-lines, kv-key, "
        "doc-path, and that rule's fields (see the file's header)",
    ]


def test_kv_key_literals(tree):
    write(tree, "src/table/scheduler.cc", '''\
        std::string Lease() { return fmt::format("t/lease/{}/{}", a, b); }
        std::string Split() { return "t/" "ver/"; }
        const char* kType = "text/plain", *kJson = "application/json", *kPath = "data/x";
        const char* kNew = "srv/repos/";  // a namespace of a module not known yet
        ''')
    write(tree, "src/catalog/keys.h", 'const char* kRuns = "c/ar/"; const char* kRepo = "c/r/";\n')
    write(tree, "src/catalog/catalog_test.cc", 'auto k = "c/r/repo";\n')
    write(tree, "src/iceberg_tables/records.cc", 'auto p = fmt::format("ice/{}/{}/", a, b);\n')
    write(tree, "src/actions/keys.cc", 'auto k = root + "t/" + run;  // one segment of its own key\n')
    assert findings(tree) == [
        'src/catalog/keys.h:1: kv-key: "c/ar/" belongs to module actions: build it in src/actions/keys.h, not here',
        'src/iceberg_tables/records.cc:1: kv-key: KV key literal "ice/{}/{}/" outside a key file: build it in '
        "src/iceberg_tables/keys.h",
        'src/table/scheduler.cc:1: kv-key: KV key literal "t/lease/{}/{}" outside a key file: build it in '
        "src/table/keys.h",
        'src/table/scheduler.cc:2: kv-key: KV key literal "t/ver/" outside a key file: build it in src/table/keys.h',
        'src/table/scheduler.cc:4: kv-key: KV key literal "srv/repos/" outside a key file: build it in its '
        "module's keys.h",
    ]


def test_architecture_paths(tree):
    doc = (tree / "docs/architecture.md").read_text()
    doc = doc.replace("`registry.cc`, `keys.h`", "`registry.cc`, `hash_internal.h`")
    doc = doc.replace("| `http/` | `errors.h` |", "| `http/` | `principal.h` |")
    doc += "\nThe server turns it into credentials (`server/principal.h`); see [gone](gone.md).\n"
    (tree / "docs/architecture.md").write_text(doc)
    assert findings(tree) == [
        "docs/architecture.md:8: doc-path: `hash_internal.h` (read as src/table/hash_internal.h) does not exist: "
        "correct the path or the page",
        "docs/architecture.md:14: doc-path: `principal.h` (read as src/server/http/principal.h) does not exist: "
        "correct the path or the page",
        "docs/architecture.md:16: doc-path: `server/principal.h` does not exist: correct the path or the page",
        "docs/architecture.md:16: doc-path: link to gone.md (read as docs/gone.md) does not exist",
    ]


def test_the_report(tree):
    script = TOOLS / "house_rules.py"
    ok = subprocess.run([sys.executable, script, tree], capture_output=True, text=True)
    assert ok.returncode == 0
    assert ok.stdout.startswith("house rules: ok (") and ok.stdout.count("\n") == 1
    write(tree, "src/table/big.cc", long_function("Big", 81))
    bad = subprocess.run([sys.executable, script, tree], capture_output=True, text=True)
    assert bad.returncode == 1
    lines = bad.stdout.splitlines()
    assert lines[0] == "src/table/big.cc:1: function-lines: Big is 81 lines, over 80"
    assert lines[1].startswith("house rules: 1 finding(s).") and house_rules.ALLOW_LIST in lines[1]
