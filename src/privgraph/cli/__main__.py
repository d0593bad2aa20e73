"""``python -m privgraph.cli``: the command line."""

from privgraph.cli import main

main()
