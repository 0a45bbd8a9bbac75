"""The ``pymsmq`` command line (thin shell over the library)."""

from __future__ import annotations

import click

from pymsmq import __version__


@click.group()
@click.version_option(__version__, prog_name="pymsmq")
def main() -> None:
    """pymsmq: MSMQ semantics and wire formats on any platform."""
