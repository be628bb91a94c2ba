"""`python -m lakeloader.cli`: the lakeloader command (lakeloader.cli.commands), as bin/lakeloader runs it."""

import sys

from lakeloader.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
