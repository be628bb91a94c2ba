"""`lakeloader.spark.spark_session`: its DEFAULTS fill in what nothing else set, and never override a setting
the driver was started with (spark-submit's --conf, the conf dir's spark-defaults.conf)."""

from __future__ import annotations

from pathlib import Path

from lakeloader.spark import DEFAULTS

SPARK_DEFAULTS = Path(__file__).resolve().parents[2] / "config" / "spark" / "spark-defaults.conf"


def _configured(key: str) -> str:
    """The value config/spark/spark-defaults.conf gives `key`."""
    for line in SPARK_DEFAULTS.read_text().splitlines():
        name, _, value = line.strip().partition(" ")
        if name == key:
            return value.strip()
    raise KeyError(key)


def test_the_conf_dirs_settings_win_over_the_defaults_which_fill_in_the_rest(spark):
    # the tests' session runs with SPARK_CONF_DIR=config/spark, as spark-submit would read it
    assert _configured("spark.sql.shuffle.partitions") != DEFAULTS["spark.sql.shuffle.partitions"]
    assert spark.conf.get("spark.sql.shuffle.partitions") == _configured("spark.sql.shuffle.partitions")
    assert spark.conf.get("spark.sql.session.timeZone") == DEFAULTS["spark.sql.session.timeZone"]
    assert spark.sparkContext.getConf().get("spark.sql.codegen.cache.maxEntries") == "2000"
