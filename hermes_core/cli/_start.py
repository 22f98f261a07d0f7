"""The `hermes` console script: `hermes plugins list [--json]` and `hermes --help` are answered
before click is imported; every other command line goes to the click CLI (`hermes_core.cli.main`).

Importing click costs about as much as the entry-point scan any listing must do, and the
listing is what a user runs most often. The fast path takes only the exact command line
`hermes plugins list` followed by flags of `LIST_OPTIONS` (the table the click command is built
from), and prints `_listing.listing()`, as the click command does. Anything else falls through
to click before a byte is written: another argument or option (`--help`, `--debug`, a typo),
shell completion, streams that are not UTF-8 (click rewraps an ASCII one), output with
terminal escapes (click strips them from a pipe), or any error (click reports it).

`hermes --help` (`-h`, or `hermes` alone) is click's own text: the fast path prints the text
click last rendered, kept in the command cache (`_command_cache`) under the key of what
discovery sees of the enabled plugins and of everything else the rendering depends on (the
terminal's width, the language, hermes-core's and click's code). With no such text, click
renders it (and keeps it for the next time).

Once the listing is written and flushed the process ends at once (`os._exit`, as `_runtime.leftovers`
does): it ran no plugin code and registered nothing to run at exit, and tearing the interpreter
down would cost more than a tenth of the listing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["main"]

_COMPLETION_VARIABLE = "_HERMES_COMPLETE"  # click's `_{PROG_NAME}_COMPLETE`
_HELP_LINES: tuple[list[str], ...] = ([], ["--help"], ["-h"])  # the command lines click answers with the root's help


def main() -> Any:
    """Run `hermes` with `sys.argv`."""
    _never_raise_on_output()
    code = _profile()
    if code is not None:
        return code
    code = _fast_help(sys.argv[1:]) if sys.argv[1:] in _HELP_LINES else _fast_listing(sys.argv[1:])
    if code == 0:
        os._exit(0)  # written and flushed; the interpreter's teardown is ~10 ms of a ~70 ms listing
    if code is not None:
        return code
    from ._main import main as click_main

    return click_main()


def _profile() -> int | None:
    """Choose the profile (`-p NAME`, `HERMES_HOME`, the sticky one) before anything reads the
    home, and take `-p NAME` out of `sys.argv`; an exit code when the choice is an error."""
    from .._errors import ProfileError
    from .._profiles.select import apply

    try:
        sys.argv[1:] = apply(sys.argv[1:], lambda line: print(f"hermes: warning: {line}", file=sys.stderr))
    except ProfileError as exc:
        from .._quote import error_line

        print(error_line(str(exc)), file=sys.stderr, flush=True)
        return 2
    return None


def _never_raise_on_output() -> None:
    """What the terminal cannot take (a lone surrogate a model or a tool gave, a character outside
    a non-UTF-8 locale's charset) is written escaped (`\\ud800`), never an error that ends the command."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a text file of io's (a test's, a closed one)
            pass


def _utf8(stream: Any) -> bool:
    import codecs

    try:
        return stream is not None and codecs.lookup(stream.encoding).name == "utf-8"
    except (AttributeError, LookupError, TypeError):
        return False


def _fast_listing(args: list[str]) -> int | None:
    """The exit code of `hermes plugins list [flags]` answered here, or None to let click answer."""
    if args[:2] != ["plugins", "list"] or _COMPLETION_VARIABLE in os.environ:
        return None
    from ._listing import LIST_OPTIONS, listing

    dests = {option.flag: option.dest for option in LIST_OPTIONS}
    if not all(arg in dests for arg in args[2:]) or not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    try:
        out, warnings = listing(**{dests[arg]: True for arg in args[2:]})
    except KeyboardInterrupt:
        return _interrupted()
    except Exception:  # noqa: BLE001 - click runs the listing again and reports the error its way
        return None
    if "\x1b" in out or any("\x1b" in line for line in warnings):
        return None
    return _write(out, warnings)


def _fast_help(args: list[str]) -> int | None:
    """The exit code of `hermes --help` printed from the text click last rendered, or None to
    let click render it."""
    if _COMPLETION_VARIABLE in os.environ or not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    from . import _command_cache

    try:
        rendering = _command_cache.rendering()
        text = None if rendering is None else _command_cache.read_help(_command_cache.fingerprint(), rendering)
    except KeyboardInterrupt:
        return _interrupted()
    except Exception:  # noqa: BLE001 - click renders the help and reports any error its way
        return None
    if text is None or "\x1b" in text:
        return None
    return _write(text, ())


def _interrupted() -> int:
    print("hermes: interrupted", file=sys.stderr, flush=True)
    return 130


def _write(out: str, warnings: Iterable[str]) -> int:
    """Print `out` and then each warning line on stderr, as the click command does."""
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
        for line in warnings:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        return 141
    except OSError as exc:  # as `hermes_core.cli` words an unexpected failure
        from .._quote import error_line, internal_error

        print(error_line(internal_error(exc)), file=sys.stderr, flush=True)
        return 1
    return 0
