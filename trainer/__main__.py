"""``python -m trainer``: the ``tabula-train`` command."""

from trainer.cli import main

if __name__ == "__main__":
    main(prog_name="tabula-train")
