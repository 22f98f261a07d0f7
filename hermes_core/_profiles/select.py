"""Which profile a command line runs as, chosen once when `hermes` starts, before anything reads
the home: every command, host and child process then sees it as `HERMES_HOME`.

1. `-p NAME`, `--profile NAME` or `--profile=NAME` anywhere on the command line before `--` (taken
   out of it, so no command sees it); `-p default` is the root;
2. else a `HERMES_HOME` that already points at `<root>/profiles/<name>`, or that a `hermes` process
   chose and handed down (`_HERMES_CHOSEN_HOME`), is kept as it is;
3. else the sticky `<root>/active_profile` (`hermes profile use NAME`), when `HERMES_HOME` is the
   root or unset.
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path

from .._errors import ProfileError
from .names import DEFAULT, active_file, check_name, native_root, profile_home, root_of

__all__ = ["CHOSEN", "apply", "choose", "scan"]

_FLAGS = ("-p", "--profile")
# The home a `hermes` process chose, for its own later calls and its children (a cron job's
# process, a host's workers): a HERMES_HOME equal to it is kept, even the root under a sticky choice.
CHOSEN = "_HERMES_CHOSEN_HOME"
_said: set[str] = set()


def scan(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """The profile a command line names (None: none) and the command line without it."""
    name: str | None = None
    rest: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":
            rest.extend(argv[index:])
            break
        if arg in _FLAGS:
            if index + 1 >= len(argv):
                raise ProfileError(f"{arg} needs a profile name: hermes {arg} NAME COMMAND ...")
            value, index = argv[index + 1], index + 2
        elif arg.startswith("--profile="):
            value, index = arg.partition("=")[2], index + 1
        else:
            rest.append(arg)
            index += 1
            continue
        check_name(value)
        if name is not None and value != name:
            raise ProfileError(f"two profiles were given ({name!r} and {value!r}); give -p NAME once")
        name = value
    return name, rest


def _sticky(root: Path, say: Callable[[str], None]) -> Path | None:
    """The home `<root>/active_profile` names, or None for the root (with a warning when it names
    a profile that is not there)."""
    try:
        text = active_file(root).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text or text == DEFAULT:
        return None
    try:
        home = profile_home(root, text)
    except ProfileError:
        home = None
    if home is None or not home.is_dir():
        say(f"{active_file(root)} names profile {text!r}, which does not exist; using the default profile "
            "(`hermes profile use default` forgets it)")
        return None
    return home


def choose(argv: Sequence[str], environ: MutableMapping[str, str],
           say: Callable[[str], None] = lambda line: None) -> tuple[Path | None, list[str]]:
    """The home the command line runs in (None: `HERMES_HOME` as it is) and the command line
    without the profile option."""
    name, rest = scan(argv)
    raw = environ.get("HERMES_HOME", "").strip()
    home = Path(raw).expanduser() if raw else native_root()
    root = root_of(home)
    if name is not None:
        target = profile_home(root, name)
        if not target.is_dir():
            raise ProfileError(f"profile {name!r} does not exist in {root}: create it with "
                               f"`hermes profile create {name}` (`hermes profile list` shows the others)")
        return target, rest
    if raw and (home.parent.name == "profiles" or environ.get(CHOSEN) == raw):
        return None, rest
    try:
        at_root = home.resolve() == root.resolve()
    except OSError:
        at_root = False
    return (_sticky(root, say) if at_root else None), rest


def apply(argv: Sequence[str], say: Callable[[str], None] = lambda line: None) -> list[str]:
    """Choose the profile for this process (`HERMES_HOME` set for it and its children) and return
    the command line without the profile option. Calling it again (the console script, then the
    click command line) chooses the same home and says no warning twice."""
    def once(line: str) -> None:
        if line not in _said:
            _said.add(line)
            say(line)

    home, rest = choose(argv, os.environ, once)
    if home is not None:
        os.environ["HERMES_HOME"] = str(home)
    if os.environ.get("HERMES_HOME"):
        os.environ[CHOSEN] = os.environ["HERMES_HOME"]
    return rest
