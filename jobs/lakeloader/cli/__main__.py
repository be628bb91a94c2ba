"""`python -m` on this package runs the lakeloader command (lakeloader.cli.commands), as the console script does."""

import sys

from lakeloader.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
