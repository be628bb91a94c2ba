"""spark-submit entry point of replays: jobs/replay.py --plan JSON --label LABEL [--config FILE].

The plan is what lakeloader.audit.replay_plan.validate returned (the Airflow replay DAG validates it first and
passes it on); it is validated again here, so the job can also be run by hand.
"""

import argparse
import json
import sys

from lakeloader.audit.replay_plan import PlanError, validate
from lakeloader.core.config import ConfigError, valid_sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark-submit jobs/replay.py")
    parser.add_argument("--plan", required=True, help='JSON: {"source", "mode", "hours": [first, last], "tables"}')
    parser.add_argument("--label", required=True, help="report name, e.g. the Airflow run id")
    parser.add_argument("--config", help="config file (default: $LAKELOADER_CONFIG or config/sources.yaml)")
    args = parser.parse_args(argv)
    try:
        config = valid_sources(args.config)
        request = json.loads(args.plan)
        hours = request.get("hours") or [None, None]
        plan = validate(config, {**request, "from_hour": hours[0], "to_hour": hours[-1]})
    except (ConfigError, PlanError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from lakeloader.audit.replay import run_replay
    from lakeloader.core.spark_conf import session_conf
    from lakeloader.spark import spark_session

    source = config.source(plan["source"])
    spark = spark_session(f"lakeloader-{source.name}-replay-{plan['mode']}", conf=session_conf(source))
    try:
        report = run_replay(spark, source, plan, args.label)
    finally:
        spark.stop()
    print(json.dumps({"step": "replay", **report}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
