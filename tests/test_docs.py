"""The documentation site builds without a warning (``make docs``: MkDocs --strict, API pages from the docstrings)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(
    shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None,
    reason="mkdocs not installed (make install adds the docs extra)",
)
def test_docs_build_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    res = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "site" / "index.html").exists()


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_front_pages_list_every_method_page(page):
    """Every method page (docs/methods/*.md) has its row in the README's and the docs index's systems table."""
    text = (ROOT / page).read_text()
    prefix = "docs/methods/" if page == "README.md" else "methods/"
    missing = [p.name for p in sorted((ROOT / "docs" / "methods").glob("*.md")) if f"]({prefix}{p.name})" not in text]
    assert not missing, f"{page} has no row for {missing}"


# ---- the API reference shows the public API only; no page loads anything from a CDN ---------------

DIRECTIVE = re.compile(r"^::: (\S+)\n((?:    .*\n)*)", re.MULTILINE)
INTERNAL = {"RESERVED", "GENERATOR_NOTE", "but"}  # what the pages listed: a request's keywords, a note, a helper


def _options() -> dict:
    yaml = pytest.importorskip("yaml")  # the docs extra's (MkDocs reads its configuration with it)
    plugins = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["plugins"]
    handler = next(p["mkdocstrings"] for p in plugins if isinstance(p, dict) and "mkdocstrings" in p)
    return handler["handlers"]["python"]["options"]


def _shown(obj, filters: list[str], undocumented: bool) -> list:
    """``obj``'s members a directive renders, as mkdocstrings selects them: public (a module's ``__all__``),
    not excluded by a ``!`` filter, documented unless ``show_if_no_docstring``."""
    out = []
    for name, member in obj.members.items():
        if not obj.is_class and not member.is_public:
            continue
        if any(re.search(f[1:], name) for f in filters if f.startswith("!")):
            continue
        target = member.final_target if member.is_alias else member
        if undocumented or target.has_docstrings:
            out.append((name, target))
    return out


def rendered_names(options: dict, page_text: str) -> list[str]:
    """Every object path the API page's ``:::`` directives render (classes' members included)."""
    griffe, yaml = pytest.importorskip("griffe"), pytest.importorskip("yaml")  # mkdocstrings' own
    package = griffe.load("privgraph", search_paths=[str(ROOT / "src")], docstring_parser="google")
    names = []
    for identifier, block in DIRECTIVE.findall(page_text):
        opts = {**options, **((yaml.safe_load(block) or {}).get("options") or {} if block.strip() else {})}
        obj = package[identifier.removeprefix("privgraph.")] if identifier != "privgraph" else package
        filters, undocumented = opts.get("filters", ["!^_[^_]"]), opts.get("show_if_no_docstring", True)
        members = opts.get("members")
        if members is False:
            stack = []
        elif isinstance(members, list):
            stack = [(f"{identifier}.{n}", obj.members[n]) for n in members]
        else:
            stack = [(f"{identifier}.{n}", t) for n, t in _shown(obj, filters, undocumented)]
        while stack:
            path, target = stack.pop()
            names.append(path)
            target = target.final_target if target.is_alias else target
            if target.is_class:
                stack += [(f"{path}.{n}", t) for n, t in _shown(target, filters, undocumented)]
    return names


def test_the_api_pages_render_no_private_or_internal_name():
    options = _options()
    assert "!^_" in options["filters"] and options["show_if_no_docstring"] is False
    pages = "".join(p.read_text() for p in sorted((ROOT / "docs" / "api").glob("*.md")))
    names = rendered_names(options, pages)
    assert "privgraph.api.privatize" in names and "privgraph.request.ReleaseRequest.build" in names
    leaked = [n for n in names if n.rsplit(".", 1)[1].startswith("_") or n.rsplit(".", 1)[1] in INTERNAL]
    assert not leaked, leaked
    # what the pages showed before (dunder names kept, undocumented constants shown): the check sees it
    before = rendered_names({**options, "filters": ["!^_[^_]"], "show_if_no_docstring": True}, pages)
    assert {"__post_init__", "RESERVED", "GENERATOR_NOTE"} <= {n.rsplit(".", 1)[1] for n in before}


def test_no_page_loads_a_script_from_elsewhere():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    scripts = config.get("extra_javascript", []) + config.get("extra_css", [])
    assert not [s for s in scripts if "://" in str(s)], scripts
    assert "pymdownx.arithmatex" not in str(config["markdown_extensions"])  # no maths: nothing for MathJax
