"""``python -m pymsmq``: the same as the ``pymsmq`` command."""

from pymsmq.cli import main

main()
