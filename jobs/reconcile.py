"""spark-submit entry point of reconciliation:

    jobs/reconcile.py --source NAME --from YYYY-MM-DDTHH [--to YYYY-MM-DDTHH]
                      [--checks accounting,state,snapshot] [--label LABEL] [--config FILE]

Writes the report to audit/<source>/reconcile/<label>.{json,md} and a row per check to the audit table,
prints a JSON summary, and exits 0 whenever the checks could run (the report says whether they passed:
the Airflow task reading it fails and alerts), 2 on bad arguments.
"""

import argparse
import json
import sys

from lakeloader.audit.reconcile_report import ACCOUNTING, CHECKS, findings
from lakeloader.cli.spark_submit import recording_cause
from lakeloader.core import zones
from lakeloader.core.config import ConfigError, load_source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark-submit jobs/reconcile.py")
    parser.add_argument("--source", required=True, help="source name from the config file")
    parser.add_argument("--from", dest="first", required=True, help="first hour to account for, YYYY-MM-DDTHH")
    parser.add_argument("--to", dest="last", help="last hour, included (default: the first hour)")
    parser.add_argument("--checks", default=ACCOUNTING, help=f"comma-separated, of: {', '.join(CHECKS)}")
    parser.add_argument("--label", help="report name (default: derived from the hours and checks)")
    parser.add_argument("--config", help="config file (default: $LAKELOADER_CONFIG or config/sources.yaml)")
    args = parser.parse_args(argv)
    checks = tuple(c.strip() for c in args.checks.split(",") if c.strip())
    try:
        source = load_source(args.config, args.source)
        first, last = zones.parse_hour(args.first), zones.parse_hour(args.last or args.first)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if last < first or not checks or set(checks) - set(CHECKS):
        print(f"error: need --from <= --to and checks among {', '.join(CHECKS)}", file=sys.stderr)
        return 2
    from lakeloader.audit.reconcile import run_reconcile
    from lakeloader.core.spark_conf import session_conf
    from lakeloader.spark import spark_session

    label = args.label or f"{zones.format_hour(first)}--{zones.format_hour(last)}-{'-'.join(checks)}"
    with recording_cause(source, first, "reconcile"):
        spark = spark_session(f"lakeloader-{source.name}-reconcile-{label}", conf=session_conf(source))
        try:
            report = run_reconcile(spark, source, zones.hour_range(first, last), checks, label)
        finally:
            spark.stop()
    summary = {"step": "reconcile", "ok": report["ok"], "report": report["report_uri"], "findings": findings(report)}
    print(json.dumps(summary, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
