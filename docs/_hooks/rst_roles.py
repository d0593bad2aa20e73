"""MkDocs hook: render the reST roles that privgraph's docstrings use.

The docstrings are Google-style with Sphinx cross-reference roles
(:func:`privatize`, :class:`~privgraph.accounting.PrivacyReport`); mkdocstrings
renders Markdown, so a role would show as ``:func:`` before the name.  This
hook drops the role, shortens a ``~`` target to its last component (Sphinx's
meaning) and, for a fully qualified ``privgraph.`` target, leaves an optional
cross-reference that mkdocs-autorefs resolves to the object's API entry (an
unknown target stays plain code, without a warning).
"""

from __future__ import annotations

import logging
import re

ROLES = "func|class|mod|meth|data|attr|obj|exc"
ROLE = re.compile(rf":(?:{ROLES}):<code>(~?)([^<]+)</code>")
# a role whose leading colon griffe took as a "name: description" separator (a Returns line such as
# "A :class:`X`: ..." renders as a value named A described "class:`X`: ..."): rephrase the docstring
BROKEN = re.compile(rf"(?<![\w:])(?:{ROLES}):<code>~?[^<]+</code>")
log = logging.getLogger("mkdocs.hooks.rst_roles")


def _replace(match: re.Match) -> str:
    tilde, target = match.groups()
    title = target.rsplit(".", 1)[-1] if tilde else target
    if target.startswith("privgraph."):
        return f'<autoref optional identifier="{target}"><code>{title}</code></autoref>'
    return f"<code>{title}</code>"


def on_page_content(html: str, page=None, **kwargs) -> str:
    html = ROLE.sub(_replace, html)
    for broken in BROKEN.findall(html):  # a warning: `mkdocs build --strict` fails
        log.warning("%s: a reST role lost its leading colon (griffe's Returns parsing?): %s", page, broken)
    return html
