"""spark-submit entry point of the parse step: jobs/parse.py --source NAME --hour YYYY-MM-DDTHH [--config F]."""

import sys

from lakeloader.parse import run_parse
from lakeloader.submit import main

if __name__ == "__main__":
    sys.exit(main("parse", run_parse))
