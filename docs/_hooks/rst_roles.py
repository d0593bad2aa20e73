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

import re

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|obj|exc):<code>(~?)([^<]+)</code>")


def _replace(match: re.Match) -> str:
    tilde, target = match.groups()
    title = target.rsplit(".", 1)[-1] if tilde else target
    if target.startswith("privgraph."):
        return f'<autoref optional identifier="{target}"><code>{title}</code></autoref>'
    return f"<code>{title}</code>"


def on_page_content(html: str, **kwargs) -> str:
    return ROLE.sub(_replace, html)
