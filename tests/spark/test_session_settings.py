"""`lakeloader.spark.spark_session`: its DEFAULTS fill in what nothing else set, and never override a setting
the driver was started with (spark-submit's --conf, the conf dir's spark-defaults.conf, the local setup's
config/spark/local.conf given as -D options by bin/with-airflow)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import SHORT_JVM_OPTIONS

from lakeloader.spark import DEFAULTS

LOCAL_CONF = Path(__file__).resolve().parents[2] / "config" / "spark" / "local.conf"


def _configured(key: str) -> str:
    """The value config/spark/local.conf gives `key`."""
    for line in LOCAL_CONF.read_text().splitlines():
        name, _, value = line.strip().partition(" ")
        if name == key:
            return value.strip()
    raise KeyError(key)


def test_the_local_settings_win_over_the_defaults_which_fill_in_the_rest(spark):
    # the tests' session runs under bin/with-airflow, which gives the driver config/spark/local.conf as -D options
    assert _configured("spark.sql.shuffle.partitions") != DEFAULTS["spark.sql.shuffle.partitions"]
    assert spark.conf.get("spark.sql.shuffle.partitions") == _configured("spark.sql.shuffle.partitions")
    assert spark.conf.get("spark.sql.session.timeZone") == DEFAULTS["spark.sql.session.timeZone"]
    assert spark.sparkContext.getConf().get("spark.sql.codegen.cache.maxEntries") == "2000"


def test_the_long_lived_session_compiles_with_the_full_jit_while_the_steps_it_submits_use_c1(spark):
    # tests/conftest.py gives submitted steps C1 only; the `spark` session, which lives for the whole run, keeps the
    # full JIT, also in a pytest-xdist worker (which inherits the controller's environment, C1 options included)
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    assert "-XX:TieredStopAtLevel=1" not in arguments
    assert any(argument.startswith("-Dspark.sql.shuffle.partitions=") for argument in arguments)
    assert SHORT_JVM_OPTIONS in os.environ["SPARK_SUBMIT_OPTS"]
