"""hermes-core's build: pyproject.toml holds everything but one file setuptools' configuration
cannot place. `hermes_core_names.pth` goes to the root of site-packages, where the interpreter
reads it at start and imports `_hermes_core_names`: Hermes' import names in every interpreter of
the environment, not only inside a loaded host (see that module)."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "hermes_core_names.pth"


class BuildPyWithPth(build_py):
    """build_py, and the .pth file beside the packages: in the wheel's root for an install, in
    the editable wheel's root for `pip install -e` (whose build_lib is thrown away)."""

    def run(self) -> None:
        super().run()
        root = self.get_finalized_command("install").install_lib if self.editable_mode else self.build_lib
        Path(root).mkdir(parents=True, exist_ok=True)
        self.copy_file(PTH, str(Path(root, PTH)), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib, PTH))]


setup(cmdclass={"build_py": BuildPyWithPth})
