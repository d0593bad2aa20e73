import pytest

import privgraph.methods.hetedp.method as method_module


@pytest.fixture
def kept_links(monkeypatch):
    """Every :class:`~privgraph.methods.hetedp.method.LinkRelease` that ``link_release`` returns, in order."""
    kept = []
    real = method_module.link_release

    def keep(*args, **kwargs):
        link = real(*args, **kwargs)
        kept.append(link)
        return link

    monkeypatch.setattr(method_module, "link_release", keep)
    return kept
