"""The layout stays readable: few modules per package, small modules and functions, no import
circle, no name defined twice, and the walls between the constructs, the pure decisions, the audit
and Spark (docs/architecture.md).

Sizes are read from the source with ``ast``: a module's lines as the file has them, a class's
lines from its ``class`` line to its last, and a function's lines of code, which leave out blank
lines, comment lines and the docstring. Imports are every ``import`` statement that runs
(module level or inside a function), except those under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "constructs_lib"
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 400
MAX_FUNCTION_CODE_LINES = 60
# Modules directly in a package, its __init__ aside: the top of `constructs_lib` and of the audit
# hold what a reader meets first, so they stay shorter than any package below them.
MAX_TOP_MODULES = 10
MAX_PACKAGE_MODULES = 12
TOPS = ("constructs_lib", "constructs_lib.audit")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def code_lines(source: str) -> set[int]:
    """Line numbers that hold code: not blank, not only a comment."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def docstring_lines(node: ast.AST) -> set[int]:
    body = getattr(node, "body", [])
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return set()


def functions_and_classes(tree: ast.Module) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node


def modules_in(package: str) -> list[str]:
    return [
        name
        for name, path in MODULES.items()
        if name.rpartition(".")[0] == package and path.name != "__init__.py"
    ]


PACKAGES = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_package_holds_more_modules_than_the_limit(package: str) -> None:
    limit = MAX_TOP_MODULES if package in TOPS else MAX_PACKAGE_MODULES
    held = modules_in(package)
    assert len(held) <= limit, f"{package} holds {len(held)} modules: group them in packages"


def test_no_module_is_longer_than_the_limit() -> None:
    too_long = {
        name: lines
        for name, path in MODULES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}, f"modules over {MAX_MODULE_LINES} lines: split them by concern"


def test_no_class_or_function_is_longer_than_the_limit() -> None:
    too_long: list[str] = []
    for name, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        code = code_lines(source)
        for node in functions_and_classes(parse(path)):
            first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
            if isinstance(node, ast.ClassDef):
                if last - first + 1 > MAX_CLASS_LINES:
                    too_long.append(f"class {name}.{node.name}: {last - first + 1} lines")
                continue
            span = set(range(first, last + 1)) - docstring_lines(node)
            loc = len(span & code)
            if loc > MAX_FUNCTION_CODE_LINES:
                too_long.append(f"def {name}.{node.name}: {loc} lines of code")  # type: ignore[attr-defined]
    assert too_long == [], (
        f"over {MAX_CLASS_LINES} lines per class or {MAX_FUNCTION_CODE_LINES} lines of code per "
        "function; name the steps and move them out"
    )


def under_type_checking(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return skipped


def imported_names(name: str, path: Path) -> set[str]:
    """Every module this one imports at run time, package-internal or not."""
    tree = parse(path)
    skipped = under_type_checking(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                # `from package import module` imports the module; `from module import name`
                # imports the module that holds the name.
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in MODULES else base)
    return found


IMPORTS = {name: imported_names(name, path) for name, path in MODULES.items()}


def ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def internal_imports(name: str) -> set[str]:
    """What importing ``name`` runs: the modules it imports, and the ``__init__`` of each package
    above them that is not above ``name`` itself (Python runs a package's ``__init__`` before its
    first module: a package that imports its children there closes a circle through any child
    that one of them imports)."""
    targets = {target for target in IMPORTS[name] if target in MODULES and target != name}
    own = {name, *ancestors(name)}
    packages = {p for target in targets for p in ancestors(target) if p in MODULES and p not in own}
    return targets | packages


def find_cycle() -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(internal_imports(node)):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(MODULES):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_no_import_circle() -> None:
    # A package's __init__ may re-export its children; a child importing its own package's
    # __init__ would close a circle, so children import each other by full module name.
    cycle = find_cycle()
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def is_audit(name: str) -> bool:
    return name == "constructs_lib.audit" or name.startswith("constructs_lib.audit.")


def imports_matching(names: set[str], prefix: str) -> set[str]:
    return {n for n in names if n == prefix or n.startswith(prefix + ".")}


# The in-app validation plugin is the audit run inside a CDK app: the one module outside the
# audit that may use it, and no construct imports the plugin.
AUDIT_IN_APP = "constructs_lib.checks"


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if not is_audit(n) and n != AUDIT_IN_APP)
)
def test_constructs_and_the_shared_brain_import_nothing_from_the_audit(name: str) -> None:
    assert imports_matching(IMPORTS[name], "constructs_lib.audit") == set()


CONSTRUCT_MODULES = sorted(
    n for n in MODULES if not is_audit(n) and imports_matching(IMPORTS[n], "aws_cdk")
)


def test_no_construct_imports_the_in_app_plugin() -> None:
    assert [n for n in CONSTRUCT_MODULES if AUDIT_IN_APP in internal_imports(n)] == []


def test_the_audit_imports_no_construct_module() -> None:
    assert CONSTRUCT_MODULES, "the constructs import aws_cdk; the check must see them"
    offending = {
        name: sorted(set(CONSTRUCT_MODULES) & internal_imports(name))
        for name in MODULES
        if is_audit(name) and set(CONSTRUCT_MODULES) & internal_imports(name)
    }
    assert offending == {}


def test_only_the_spark_engine_imports_pyspark() -> None:
    importers = {name for name in MODULES if imports_matching(IMPORTS[name], "pyspark")}
    assert any(n.startswith("constructs_lib.audit.engines.spark.") for n in importers), (
        "the Spark engine imports pyspark; the check must see it"
    )
    outside = {n for n in importers if not n.startswith("constructs_lib.audit.engines.spark.")}
    assert outside == set()


def text_names_of(name: str) -> set[str]:
    """Module names a module writes as strings (``optional.require("pyspark.sql")``)."""
    return {
        node.value
        for node in ast.walk(parse(MODULES[name]))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_only_the_spark_engine_loads_pyspark_by_name() -> None:
    loaders = {
        name
        for name in MODULES
        if not name.startswith("constructs_lib.audit.engines.spark")
        and any(text == "pyspark" or text.startswith("pyspark.") for text in text_names_of(name))
        and "constructs_lib.audit.optional" in IMPORTS[name]
    }
    assert loaders == set()


@pytest.mark.parametrize(
    "name", sorted(n for n in MODULES if n.startswith("constructs_lib.policy"))
)
def test_the_pure_decisions_import_no_cdk(name: str) -> None:
    assert (
        imports_matching(IMPORTS[name], "aws_cdk") | imports_matching(IMPORTS[name], "constructs")
        == set()
    )


def defined_names(path: Path) -> Iterator[str]:
    """Classes, and type aliases written as module-level ``Name = Literal[...]`` or
    ``Name: TypeAlias = ...`` (Python 3.11 has no ``type`` statement): the names a reader might
    meet twice."""
    tree = parse(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield node.name
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
            if ast.unparse(node.value.value) in ("Literal", "typing.Literal"):
                yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        elif (
            isinstance(node, ast.AnnAssign)
            and "TypeAlias" in ast.unparse(node.annotation)
            and isinstance(node.target, ast.Name)
        ):
            yield node.target.id


def test_no_class_or_type_is_defined_twice() -> None:
    where: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        for defined in defined_names(path):
            where.setdefault(defined, []).append(name)
    assert {n: places for n, places in where.items() if len(places) > 1} == {}


CONSTRUCT_SIDE = sorted(
    n
    for n in MODULES
    if not is_audit(n)
    and n != "constructs_lib.params"
    and not n.startswith("constructs_lib.params.")
)


@pytest.mark.parametrize("name", CONSTRUCT_SIDE)
def test_only_the_parameter_tables_take_a_call_s_arguments(name: str) -> None:
    # A call's arguments are judged in params/ and leave it as one typed settings object
    # (params/settings.py): a function elsewhere taking `arguments` would read them by string
    # key again, where mypy checks nothing.
    takers = [
        node.name
        for node in ast.walk(parse(MODULES[name]))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(a.arg == "arguments" for a in [*node.args.args, *node.args.kwonlyargs])
    ]
    assert takers == []
