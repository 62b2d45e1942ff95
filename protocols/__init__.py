"""Protocol adapters (UCI, USI, GTP) and the ``tabula`` command line.  Nothing here imports torch."""
