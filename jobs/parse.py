"""spark-submit entry point of the parse step: jobs/parse.py --source NAME --hour YYYY-MM-DDTHH [--config F]."""

import sys

from lakeloader.cli.spark_submit import main
from lakeloader.parse.step import run_parse

if __name__ == "__main__":
    sys.exit(main("parse", run_parse))
