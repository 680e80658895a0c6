"""``python -m pcs``: the same command-line interface as the ``pcs`` script."""
from pcs.cli.main import main

if __name__ == "__main__":  # pragma: no cover
    main()
