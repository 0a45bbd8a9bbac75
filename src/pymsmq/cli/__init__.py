"""The ``pymsmq`` command line: a thin shell over the library (embedded queue manager or a server).

Every queue command takes ``--data DIR`` (the embedded queue manager stored in DIR) or ``--url
msmq://host:port`` (a ``pymsmq serve`` server, with ``--token``), also from PYMSMQ_DATA /
PYMSMQ_URL / PYMSMQ_TOKEN.  Exit codes: 0 ok, 1 MSMQ error, 2 bad usage or input, 3 timeout or no
message (docs/cli.md).
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

import click

from pymsmq import __version__
from pymsmq.cli.decode import decode
from pymsmq.cli.messages import move, peek, receive, send
from pymsmq.cli.queues import queue
from pymsmq.cli.stats import stats
from pymsmq.cli.transfer import export, import_

__all__ = ["main"]


class _Main(click.Group):
    """The root group; ``serve`` (pymsmq.cli.serve) is loaded only when it is asked for."""

    _LAZY: ClassVar[dict[str, str]] = {"serve": "pymsmq.cli.serve", "pipeline": "pymsmq.cli.pipeline"}

    def _lazy(self, name: str) -> click.Command | None:
        module = self._LAZY.get(name)
        if module is None:
            return None
        try:
            command: Any = getattr(importlib.import_module(module), name, None)
        except ImportError:
            return None
        return command if isinstance(command, click.Command) else None

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        names.update(name for name in self._LAZY if self._lazy(name) is not None)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, cmd_name) or self._lazy(cmd_name)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pymsmq")
def main() -> None:
    """pymsmq: MSMQ semantics and wire formats on any platform.

    Queue commands need a queue manager: --data DIR (embedded) or --url msmq://host:port (a
    server), or PYMSMQ_DATA / PYMSMQ_URL. Exit codes: 0 ok, 1 MSMQ error, 2 bad usage or input,
    3 timeout or no message.

    \b
    Example:
      pymsmq queue create --data ./qm '.\\private$\\orders'
      pymsmq send --data ./qm '.\\private$\\orders' 'hello' --recoverable
      pymsmq receive --data ./qm '.\\private$\\orders'
      echo 10cd1b004c494f5224000000ffffffff0000010001000000000000000000000040000000 | pymsmq decode --hex -
    """


for _command in (decode, queue, send, receive, peek, move, export, import_, stats):
    main.add_command(_command)
