"""Hermes' import names in every interpreter of an environment hermes-core is installed in.

`hermes_core_names.pth` (in site-packages) imports this module when the interpreter starts. It
adds one finder to the end of `sys.meta_path` and does nothing else: no hermes-core code is
imported until a program imports one of Hermes' names (`gateway.config`, `hermes_cli.config`,
...) that no real module answers, as an installer checking that it runs beside Hermes does.
Then hermes-core's own finder (`hermes_core._hermes.names`) takes over and serves it. Being last,
it never shadows a real module: Hermes Agent itself, or any package on `sys.path`, is found first.

PYTEST_DONT_REWRITE: imported before pytest starts, so pytest's plugin loading must not try to.
"""

import sys  # nothing else: this module is imported by every interpreter start

# The top-level names of `hermes_core._hermes.names.SERVED` (a test keeps the two the same).
TOP_LEVEL = frozenset({"agent", "gateway", "hermes_cli", "hermes_constants", "plugin_runtime", "providers", "tools"})


class HermesNames:
    """Hands the first import of a Hermes name to hermes-core's finder, then steps aside."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname.partition(".")[0] not in TOP_LEVEL:
            return None
        try:
            from hermes_core._hermes import names
        except ImportError:  # hermes-core is gone but this file was left behind
            return None
        names.install()
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        return names._FINDER.find_spec(fullname, path, target)


if not any(type(finder).__name__ == "HermesNames" for finder in sys.meta_path):
    sys.meta_path.append(HermesNames())
