"""Entry points: the lakeloader command, the local runner, spark-submit's step wrapper and the source summary."""
