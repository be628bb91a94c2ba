"""spark-submit entry point of the apply step: jobs/apply.py --source NAME --hour YYYY-MM-DDTHH [--config F]."""

import sys

from lakeloader.apply.step import run_apply
from lakeloader.cli.spark_submit import main

if __name__ == "__main__":
    sys.exit(main("apply", run_apply))
