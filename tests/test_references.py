"""Every name the prose points at exists: each ``privgraph.<module>[.<name>]`` and each repository path
(``src/…``, ``tests/…``, ``benchmarks/…``, ``docs/…``) in a docstring or comment of the package, the tests and the
benchmarks, or on a docs page or the README, and each Sphinx role (``:func:`name```) of the package's docstrings.
A renamed or deleted module otherwise leaves its readers a dead pointer.  Modules are found as files and names in their
module's syntax tree (followed through ``from privgraph… import``); only a name that tree cannot tell (a lazy
``__getattr__``, an inherited attribute) is imported and read with ``getattr``."""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SRC = REPO / "src"
NAME = re.compile(r"(?<![\w/.\-])privgraph(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"(?<![\w/.\-:~$])(?:src|tests|benchmarks|docs)/[\w.\-/]*\w")
# a path that goes on as a pattern or a placeholder names no one file
PATTERN_NEXT = set("*{<[$")
# file names, not modules: ``results/privgraph.jsonl`` and the like
FILE_SUFFIXES = {"json", "jsonl", "toml", "py", "md", "log", "csv", "pt", "npz", "txt", "whl"}
# a path component in capitals is a placeholder: ``docs/results/NAME.md``, ``docs/PAGE``
PLACEHOLDER = re.compile(r"^_?[A-Z][A-Z_\-]{2,}$")
# Names that are right but not of this checkout, each with its reason.
ALLOWED: dict[str, str] = {
    "src/blink/run_blink.py": "the Blink authors' repository (Blink_GNN), whose protocol is reproduced",
    "src/blink/server.py": "the Blink authors' repository (Blink_GNN)",
    "src/data/citeseer.py": "the Blink authors' repository (Blink_GNN)",
    "src/data/split.py": "the Blink authors' repository (Blink_GNN)",
    "src/ldpgcn/server.py": "the Blink authors' repository: their L-DpGCN server",
    "src/MIA/blackbox": "the GraphLeaks authors' repository (the shadow-model notebooks)",
    "src/MIA/blackbox/Shadow/graphsage_Cora.ipynb": "the GraphLeaks authors' notebook the published figure is from",
    "privgraph.a": "tests/test_layers.py's example of a module name",
    "privgraph.a.b": "tests/test_layers.py's example of a module name",
}
# Folders of files that are written, not committed, each with its reason.
ALLOWED_UNDER = {"benchmarks/out/": "the scripts' default output folder (.gitignore)"}


def prose_of_python(path: Path) -> str:
    """The docstrings and the comments of a Python file, one block of text."""
    text = path.read_text(encoding="utf-8")
    parts = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    parts += [tok.string for tok in tokens if tok.type == tokenize.COMMENT]
    return "\n".join(parts)


def sources() -> dict[str, str]:
    """The prose of every checked file, by its path relative to the repository."""
    out = {}
    for root in ("src", "tests", "benchmarks"):
        for path in sorted((REPO / root).rglob("*.py")):
            out[path.relative_to(REPO).as_posix()] = prose_of_python(path)
    for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:  # not CHANGELOG.md: history
        out[path.relative_to(REPO).as_posix()] = path.read_text(encoding="utf-8")
    return out


def module_file(dotted: str) -> Path | None:
    base = SRC.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def body_names(body: list[ast.stmt], package: str) -> dict[str, object]:
    """What each name a module's (or a class's) top level binds is: a definition's node, ``"value"``, or the
    dotted name a ``from privgraph… import`` brings (``"external"`` for any other import)."""
    names: dict[str, object] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id: "value" for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                source = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], source]).strip(".")
            for alias in node.names:
                inner = source.startswith("privgraph")
                names[alias.asname or alias.name] = f"{source}.{alias.name}" if inner else "external"
        elif isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0]: "external" for a in node.names}
        elif isinstance(node, ast.If | ast.Try):  # ``if TYPE_CHECKING:`` and guarded imports
            names |= body_names(node.body, package)
    return names


@cache
def module_names(dotted: str) -> dict[str, object]:
    path = module_file(dotted)
    assert path is not None
    package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
    return body_names(ast.parse(path.read_text(encoding="utf-8")).body, package)


def resolved_by_tree(module: str, rest: list[str]) -> bool | None:
    """Whether ``module``'s syntax tree defines ``rest``; None where only an import can tell (a lazy
    ``__getattr__``, an inherited attribute, an attribute of an attribute)."""
    names = module_names(module)
    bound = names.get(rest[0])
    if bound is None:
        return None if "__getattr__" in names else False
    if len(rest) == 1:
        return True
    if isinstance(bound, str) and bound.startswith("privgraph"):
        return resolves(".".join([bound, *rest[1:]]))
    if isinstance(bound, ast.ClassDef) and len(rest) == 2 and rest[1] in body_names(bound.body, module):
        return True
    return None


def resolves(dotted: str) -> bool:
    """A dotted name: the longest prefix that is a module file, then the rest as names its syntax tree defines,
    or else as attributes of the imported module (a dataclass's fields count as its attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module_file(module) is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        if rest[0] in FILE_SUFFIXES and len(rest) == 1:
            return True  # a file named like the module (``privgraph.jsonl``): not a Python name
        found = resolved_by_tree(module, rest)
        if found is not None:
            return found
        try:
            obj = importlib.import_module(module)
            for attr in rest:
                fields = getattr(obj, "__dataclass_fields__", {})
                obj = fields[attr] if attr in fields and not hasattr(obj, attr) else getattr(obj, attr)
        except (ImportError, AttributeError):
            return False
        return True
    return False


def stale_references(files: dict[str, str]) -> list[str]:
    stale = []
    for where, text in files.items():
        for m in NAME.finditer(text):
            if m.group() not in ALLOWED and not resolves(m.group()):
                stale.append(f"{where}: {m.group()}")
        for m in PATH.finditer(text):
            name = m.group().split("::")[0]
            if text[m.end() : m.end() + 1] in PATTERN_NEXT or name in ALLOWED:
                continue
            if any(PLACEHOLDER.match(part.split(".")[0]) for part in name.split("/")):
                continue
            if any(name.startswith(folder) for folder in ALLOWED_UNDER):
                continue
            # a page's markdown link is relative to the page
            base = (REPO / where).parent if text[m.start() - 2 : m.start()] == "](" else REPO
            if not (base / name).exists():
                stale.append(f"{where}: {name}")
    return sorted(set(stale))


def test_every_named_module_symbol_and_path_exists():
    stale = stale_references(sources())
    assert not stale, "names in docstrings, comments or docs that do not exist:\n" + "\n".join(stale)


def test_the_check_finds_a_dead_module_a_dead_symbol_and_a_dead_path():
    text = (
        "see privgraph.api.release, privgraph.no_such_module, privgraph.api.no_such_function, "
        "tests/test_references.py, tests/no_such_test.py and docs/results/{name}.md"
    )
    assert stale_references({"x.md": text}) == [
        "x.md: privgraph.api.no_such_function",
        "x.md: privgraph.no_such_module",
        "x.md: tests/no_such_test.py",
    ]


def test_the_prose_of_a_python_file_is_its_docstrings_and_comments(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('"""Module doc."""\n\n\ndef f():\n    """Function doc."""\n    return "code"  # a comment\n')
    prose = prose_of_python(path)
    assert "Module doc." in prose and "Function doc." in prose and "# a comment" in prose
    assert "code" not in prose.replace("# a comment", "")


# a role naming another library's object (``:func:`numpy.packbits```) is that library's to keep
EXTERNAL = {"numpy", "np", "torch", "torch_geometric", "scipy", "ray", "click", "networkx", "sklearn"}
ROLE = re.compile(r":(?:func|data|class|meth|attr|mod|exc|obj):`~?([^`<]*?)(?:\s*<~?([^`>]+)>)?`")


def names_in_file(tree: ast.Module) -> set[str]:
    """Every name a file defines anywhere: definitions, assignment targets, attributes it sets, imports,
    parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name | ast.arg):
            names.add(node.id if isinstance(node, ast.Name) else node.arg)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def stale_roles(path: Path) -> list[str]:
    """The Sphinx roles of a package module's docstrings whose target neither the file defines nor the package
    has (``privgraph.<target>``)."""
    stale = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    local = names_in_file(tree) | set(dir(__builtins__))
    for m in ROLE.finditer(prose_of_python(path)):
        target = (m.group(2) or m.group(1)).strip().rstrip("()")
        if not re.fullmatch(r"[A-Za-z_][\w.]*", target):
            continue
        if target.split(".")[0] in EXTERNAL:
            continue
        if target.startswith("privgraph."):
            ok = resolves(target)
        else:
            ok = target.split(".")[0] in local or resolves(f"privgraph.{target}")
        if not ok:
            stale.append(f"{path.name}: {m.group()}")
    return stale


def test_every_sphinx_role_of_the_package_names_something_that_exists():
    stale = [s for path in sorted((SRC / "privgraph").rglob("*.py")) for s in stale_roles(path)]
    assert not stale, "roles in docstrings whose target does not exist:\n" + "\n".join(stale)


def test_the_role_check_finds_a_dead_target_and_accepts_local_package_and_library_names(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        '"""See :func:`helper`, :func:`~privgraph.api.release`, :func:`api.release`, :func:`numpy.packbits`,\n'
        ':class:`Gone`, :data:`privgraph.api.GONE`."""\n\n\ndef helper():\n    pass\n'
    )
    assert stale_roles(path) == ["m.py: :class:`Gone`", "m.py: :data:`privgraph.api.GONE`"]
