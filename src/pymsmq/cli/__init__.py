"""The ``pymsmq`` command line: a thin shell over the library."""

from __future__ import annotations

import click

from pymsmq import __version__
from pymsmq.cli.decode import decode

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pymsmq")
def main() -> None:
    """pymsmq: MSMQ semantics and wire formats on any platform.

    \b
    Example:
      pymsmq decode tests/vectors/mqqb-4.1.8-frame8-sessionack.bin
    """


main.add_command(decode)
