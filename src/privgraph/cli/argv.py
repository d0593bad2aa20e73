"""argv rewriting before click parses it: options that take several space-separated values."""

from __future__ import annotations

# options that accept several space-separated values (`--epsilon 0.1 0.5 1`)
MULTI_VALUE_OPTIONS = ("--epsilon",)


def _is_option(arg: str) -> bool:
    """``--name`` or ``-o`` (but not a negative number)."""
    if not arg.startswith("-"):
        return False
    try:
        float(arg)
        return False
    except ValueError:
        return True


def expand_multi_value_options(argv: list[str]) -> list[str]:
    """Rewrite ``--epsilon 0.1 0.5 1`` as ``--epsilon 0.1 --epsilon 0.5 --epsilon 1``
    (click options take one value each); ``--epsilon 0.1,0.5`` also works."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, _, inline = arg.partition("=")
        if name in MULTI_VALUE_OPTIONS:
            values = [inline] if inline else []
            i += 1
            while not inline and i < len(argv) and not _is_option(argv[i]):
                values.append(argv[i])
                i += 1
            for v in values:
                for piece in filter(None, v.split(",")):
                    out += [name, piece]
            if not values:
                out.append(name)
            continue
        out.append(arg)
        i += 1
    return out
