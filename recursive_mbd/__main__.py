"""``python -m recursive_mbd``: see ``recursive_mbd.cli``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
