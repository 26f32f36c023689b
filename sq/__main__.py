"""The `sq` command's process (`python -m sq` and the `sq` script): Ctrl-C around `sq.cli.main.main`.

Ctrl-C at any moment from here on — while sq.cli.main and numpy still load (the
interrupt waits for the end of the loading, a fraction of a second), while the
arguments are parsed, during a command — ends the command with one line on
stderr and exit status 130, never a traceback. A second Ctrl-C ends the process
at once (death by SIGINT), without waiting for whatever the first one stopped.
"""
import os
import signal
import sys


class Interrupted(KeyboardInterrupt):
    """The KeyboardInterrupt that Ctrl-C raises in the command.

    Not KeyboardInterrupt itself because CPython (3.10 to 3.13) marks a process to
    die by SIGINT at exit as soon as a plain KeyboardInterrupt leaves code run by
    exec() — dataclasses and namedtuples make their methods that way while a module
    loads — even when the command catches it afterwards: exit 130 then became a
    signal death. The mark is set for KeyboardInterrupt exactly, not for a subclass.
    """


def _on_ctrl_c(signum, frame):
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    raise Interrupted


_ctrl_c_while_loading: list[int] = []


def _note_ctrl_c(signum, frame):
    # Raised during an import, the interrupt may come out as another error: numpy's C
    # part, for one, reports any failure to load as an ImportError with a traceback.
    _ctrl_c_while_loading.append(signum)


def entry(argv: list[str] | None = None) -> int:
    """Run the command; its exit status."""
    try:
        signal.signal(signal.SIGINT, _note_ctrl_c)
        from sq.cli.main import main

        signal.signal(signal.SIGINT, _on_ctrl_c)
        if _ctrl_c_while_loading:
            raise Interrupted
        return main(argv)
    except KeyboardInterrupt as stop:  # a command may have put its own line in it (a sweep's count)
        if os.environ.get("SQ_DEBUG"):
            import traceback

            traceback.print_exc()
        print(str(stop) or "interrupted", file=sys.stderr)
        from sq.cli.main import EXIT_INTERRUPTED  # loaded: an interrupt while it loads waits for the end

        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(entry())
