"""``python -m protocols``: the ``tabula`` command.  Also the entry script of the PyInstaller bundle
(``build.spec``), so the built ``tabula`` and the installed one start the same way."""

from protocols.cli import main

if __name__ == "__main__":
    main(prog_name="tabula")
