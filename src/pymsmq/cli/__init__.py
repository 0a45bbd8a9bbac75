"""The ``pymsmq`` command line: a thin shell over the library (embedded queue manager or a server).

Every queue command takes ``--data DIR`` (the embedded queue manager stored in DIR) or ``--url
msmq://host:port`` (a ``pymsmq serve`` server, with ``--token``), also from PYMSMQ_DATA /
PYMSMQ_URL / PYMSMQ_TOKEN.  Exit codes: 0 ok, 1 MSMQ error, 2 bad usage or input, 3 timeout or no
message, 4 done with damaged or lost messages named (docs/cli.md).
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

import click

from pymsmq import __version__

__all__ = ["main"]


class _Main(click.Group):
    """The root group; each command's module is imported when the command is asked for (a command
    then starts without the others' imports: `pymsmq send --url` loads no embedded queue manager and
    no packet decoder)."""

    #: command name -> (module, attribute).
    _LAZY: ClassVar[dict[str, tuple[str, str]]] = {
        "decode": ("pymsmq.cli.decode", "decode"),
        "queue": ("pymsmq.cli.queues", "queue"),
        "send": ("pymsmq.cli.messages", "send"),
        "receive": ("pymsmq.cli.messages", "receive"),
        "peek": ("pymsmq.cli.messages", "peek"),
        "move": ("pymsmq.cli.messages", "move"),
        "export": ("pymsmq.cli.transfer", "export"),
        "import": ("pymsmq.cli.transfer", "import_"),
        "stats": ("pymsmq.cli.stats", "stats"),
        "backup": ("pymsmq.cli.backup", "backup"),
        "ping": ("pymsmq.cli.ping", "ping"),
        "restore": ("pymsmq.cli.backup", "restore"),
        "salvage": ("pymsmq.cli.backup", "salvage"),
        "serve": ("pymsmq.cli.serve", "serve"),
        "pipeline": ("pymsmq.cli.pipeline", "pipeline"),
    }

    #: Commands that need an extra (pyspark; the server's imports): left out when it is missing.
    _EXTRAS: ClassVar[frozenset[str]] = frozenset({"serve", "pipeline"})

    def _lazy(self, name: str) -> click.Command | None:
        where = self._LAZY.get(name)
        if where is None:
            return None
        module, attribute = where
        try:
            command: Any = getattr(importlib.import_module(module), attribute, None)
        except ImportError:
            if name in self._EXTRAS:  # an extra that is not installed: no such command here
                return None
            raise
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
    3 timeout or no message, 4 (backup, restore, salvage) done with damaged or lost messages
    named, 130 (143) stopped by Ctrl-C (SIGTERM).

    \b
    Example:
      pymsmq queue create --data ./qm '.\\private$\\orders'
      pymsmq send --data ./qm '.\\private$\\orders' 'hello' --recoverable
      pymsmq receive --data ./qm '.\\private$\\orders'
      echo 10cd1b004c494f5224000000ffffffff0000010001000000000000000000000040000000 | pymsmq decode --hex -
    """
