"""load_config: a valid file loads with paths resolved and defaults merged; every mistake raises ConfigError with a
message that names where the mistake is and what is expected."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lakeloader.core.config import (
    CONFIG_ENV_VAR,
    SUPPORTED_FORMATS,
    ConfigError,
    SourceConfig,
    load_config,
    load_source,
    load_sources,
)


def write(tmp_path: Path, text: str, name: str = "sources.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def config_error(path: Path) -> str:
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    return str(raised.value)


VALID = """\
    defaults:
      format: dataworks_json
      lake_root: ../lake
      retries: 5
    sources:
      - name: shop
        export_uri: exports/shop
        tables: [shop.orders, shop.users]
        primary_keys:
          shop.orders: [id]
      - name: billing
        export_uri: s3://bucket/exports/billing
        lake_root: s3://bucket/lake
        s3_endpoint_url: http://127.0.0.1:9000
        retries: 0
"""


def test_valid_file_loads_with_relative_paths_resolved_against_its_directory_and_defaults_merged(
    tmp_path: Path,
) -> None:
    config_dir = tmp_path / "conf"
    config_dir.mkdir()

    config = load_config(write(config_dir, VALID))

    shop, billing = config.sources
    assert shop == SourceConfig(
        name="shop",
        format="dataworks_json",
        export_uri=str(config_dir / "exports" / "shop"),
        lake_root=str(tmp_path / "lake"),
        tables=("shop.orders", "shop.users"),
        primary_keys={"shop.orders": ("id",)},
        retries=5,
    )
    assert (billing.format, billing.export_uri, billing.lake_root) == (
        "dataworks_json",
        "s3://bucket/exports/billing",
        "s3://bucket/lake",
    )
    assert (billing.retries, billing.s3_endpoint_url, billing.tables) == (0, "http://127.0.0.1:9000", None)
    assert (billing.schedule, billing.start_date) == ("0 * * * *", "2026-01-01T00:00:00+00:00")
    assert config.source("billing") is billing
    assert shop.includes("shop", "orders") and not shop.includes("shop", "payments")
    assert billing.includes("any", "table")


def test_path_comes_from_the_environment_variable_when_not_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV_VAR, str(write(tmp_path, VALID)))

    assert [s.name for s in load_config().sources] == ["shop", "billing"]


def test_the_shipped_sources_file_is_valid() -> None:
    assert load_config(Path(__file__).parents[2] / "config" / "sources.yaml").sources


def test_unknown_source_name_lists_the_configured_ones(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, VALID))

    with pytest.raises(ConfigError, match=r"unknown source 'shoop'; configured sources: shop, billing"):
        config.source("shoop")


def test_missing_required_key_names_the_source_and_the_key(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - name: shop
                format: dataworks_json
                lake_root: /lake
            """,
        )
    )

    assert "sources[0] (shop).export_uri: required key is missing (where the exporter drops topic files" in message


def test_misspelled_key_is_rejected_with_the_key_it_probably_meant(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - name: shop
                format: dataworks_json
                export_uri: /exports
                lake_root: /lake
                retires: 3
            """,
        )
    )

    assert "sources[0] (shop).retires: unknown key (check its spelling; did you mean 'retries'?" in message
    assert "known keys: name, format, export_uri, lake_root" in message


def test_misspelled_key_in_defaults_is_reported_at_defaults(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            defaults:
              lake_rot: /lake
            sources:
              - {name: shop, format: dataworks_json, export_uri: /exports, lake_root: /lake}
            """,
        )
    )

    assert "defaults.lake_rot: unknown key (check its spelling; did you mean 'lake_root'?" in message
    assert "sources[0]" not in message


def test_unknown_top_level_key_is_rejected(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            source:
              - {name: shop, format: dataworks_json, export_uri: /exports, lake_root: /lake}
            """,
        )
    )

    assert "  sources: required key is missing (a list of source declarations)" in message
    assert "  source: unknown key (check its spelling; did you mean 'sources'?" in message


def test_unsupported_format_lists_the_supported_ones(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - {name: shop, format: maxwell_json, export_uri: /exports, lake_root: /lake}
            """,
        )
    )

    listed = ", ".join(f"'{f}'" for f in SUPPORTED_FORMATS[:-1]) + f" or '{SUPPORTED_FORMATS[-1]}'"
    assert f"sources[0] (shop).format: expected one of {listed}, got 'maxwell_json'" in message
    assert "'dataworks_json', 'dataworks_v2'" in listed and "'auto'" in listed


def test_table_name_without_db_is_rejected(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - name: shop
                format: dataworks_json
                export_uri: /exports
                lake_root: /lake
                tables: [shop.orders, orders]
            """,
        )
    )

    assert "sources[0] (shop).tables: table 'orders' must be written as 'db.table'" in message
    assert "Value error" not in message


def test_primary_key_table_name_without_db_is_rejected(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - name: shop
                format: dataworks_json
                export_uri: /exports
                lake_root: /lake
                primary_keys: {orders: [id]}
            """,
        )
    )

    assert "sources[0] (shop).primary_keys: table 'orders' must be written as 'db.table'" in message


def test_duplicate_source_names_are_rejected_at_sources(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - {name: shop, format: dataworks_json, export_uri: /a, lake_root: /lake}
              - {name: billing, format: dataworks_json, export_uri: /b, lake_root: /lake}
              - {name: shop, format: dataworks_json, export_uri: /c, lake_root: /lake}
            """,
        )
    )

    assert "  sources: source names must be unique; repeated: shop" in message


def test_bad_source_name_says_what_a_name_may_contain(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - {name: My-Shop, format: dataworks_json, export_uri: /a, lake_root: /lake}
            """,
        )
    )

    assert "sources[0] (My-Shop).name: expected a lower-case identifier (a letter, then up to 62" in message
    assert "got 'My-Shop'" in message


def test_unsupported_uri_scheme_is_rejected(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - {name: shop, format: dataworks_json, export_uri: "ftp://host/x", lake_root: /lake}
            """,
        )
    )

    assert "sources[0] (shop).export_uri: expected a local path, a file:// URI or an s3://bucket/prefix URI" in message


def test_every_mistake_is_reported_at_once_without_noise(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - {name: shop, format: dataworks_json, lake_root: /lake, retries: -1}
            """,
        )
    )

    assert message.splitlines() == [
        f"invalid config file {tmp_path / 'sources.yaml'}:",
        "  sources[0] (shop).export_uri: required key is missing (where the exporter drops topic files: a directory"
        " or s3://bucket/prefix)",
        "  sources[0] (shop).retries: Input should be greater than or equal to 0",
    ]


def test_empty_source_list_is_rejected(tmp_path: Path) -> None:
    assert "  sources: expected a list of at least one source" in config_error(write(tmp_path, "sources: []\n"))


def test_missing_file_names_the_path_and_the_environment_variable(tmp_path: Path) -> None:
    message = config_error(tmp_path / "nope.yaml")

    assert message == f"config file {tmp_path / 'nope.yaml'} not found (set ${CONFIG_ENV_VAR} or create it)"


def test_directory_instead_of_a_file_is_a_config_error(tmp_path: Path) -> None:
    assert f"config file {tmp_path} cannot be read" in config_error(tmp_path)


def test_invalid_yaml_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "sources:\n  - name: shop\n    format: [dataworks_json\n")

    message = config_error(path)

    assert message.startswith(f"config file {path} is not valid YAML:")
    assert "line 4" in message


def test_file_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, "- shop\n"))

    assert message.endswith(": expected a mapping with a 'sources' list at the top")


def test_defaults_that_are_not_a_mapping_are_rejected(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, "defaults: [retries]\nsources: []\n"))

    assert message.endswith(": 'defaults' must be a mapping of source keys")


def test_format_specific_keys_load_normalised(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """\
            sources:
              - name: hub
                format: datahub_tuple
                export_uri: /exports
                lake_root: /lake
                db: shop
                column_types:
                  shop.orders: {id: BIGINT, amount: "decimal(10, 2)", at: timestamp}
              - name: oms
                format: oms_default
                export_uri: /exports
                lake_root: /lake
                tables: [tenant.shop.orders]
                primary_keys: {tenant.shop.orders: [id]}
                column_types: {tenant.shop.orders: {id: bigint}}
            """,
        )
    )

    hub, oms = config.sources
    assert hub.db == "shop"
    assert hub.column_types == {"shop.orders": {"id": "bigint", "amount": "decimal(10,2)", "at": "timestamp"}}
    assert oms.includes("tenant.shop", "orders")  # an OceanBase db is 'tenant.database'
    assert oms.primary_keys == {"tenant.shop.orders": ("id",)}


def test_datahub_tuple_needs_a_db_and_other_formats_reject_one(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - {name: hub, format: datahub_tuple, export_uri: /a, lake_root: /lake}
              - {name: shop, format: dataworks_json, export_uri: /b, lake_root: /lake, db: shop}
            """,
        )
    )

    assert message.splitlines()[1:] == [
        "  sources[0] (hub): format datahub_tuple needs 'db': its messages name the table but not the database",
        "  sources[1] (shop): 'db' is only used by format(s) datahub_tuple; remove it",
    ]


def test_column_types_must_be_spark_types_and_are_accepted_for_every_format(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - name: hub
                format: datahub_tuple
                export_uri: /a
                lake_root: /lake
                db: shop
                column_types: {shop.orders: {id: LONG, price: "decimal(40,2)"}, orders: {id: bigint}}
              - name: shop
                format: dataworks_json
                export_uri: /b
                lake_root: /lake
                column_types: {shop.orders: {id: bigint}}
            """,
        )
    )

    assert "sources[0] (hub).column_types: table 'orders' must be written as 'db.table'" in message
    assert "sources[1]" not in message  # every format accepts column_types: a configured type wins
    only_types = config_error(
        write(
            tmp_path,
            """\
            sources:
              - name: hub
                format: datahub_tuple
                export_uri: /a
                lake_root: /lake
                db: shop
                column_types: {shop.orders: {id: LONG}}
            """,
        )
    )
    assert (
        "sources[0] (hub).column_types: type 'LONG' of shop.orders.id is not one of tinyint, smallint, int, bigint,"
        " float, double, boolean, string, binary, date, timestamp, timestamp_ntz, decimal(p,s)"
        " (with 1 <= p <= 38, 0 <= s <= p)" in only_types
    )


def test_debezium_smt_needs_topic_tables_and_other_formats_reject_them(tmp_path: Path) -> None:
    message = config_error(
        write(
            tmp_path,
            """\
            sources:
              - {name: a, format: debezium_smt, export_uri: /a, lake_root: /l}
              - {name: b, format: debezium_smt, export_uri: /b, lake_root: /l, topic_tables: {t: orders}}
              - {name: c, format: debezium_smt, export_uri: /c, lake_root: /l, topic_tables: {a/b: shop.orders}}
              - {name: d, format: canal_json, export_uri: /d, lake_root: /l, topic_tables: {t: shop.orders}}
            """,
        )
    )

    assert message.splitlines()[1:] == [
        "  sources[0] (a): format debezium_smt needs 'topic_tables' (topic directory -> 'db.table'): its messages"
        " name no table",
        "  sources[1] (b).topic_tables: table 'orders' must be written as 'db.table'",
        "  sources[2] (c).topic_tables: topic 'a/b' must be a directory name (non-empty, no '/')",
        "  sources[3] (d): 'topic_tables' is only used by format debezium_smt; remove it",
    ]


TWO_SOURCES_ONE_BROKEN = """\
    sources:
      - name: shop
        format: canal_json
        export_uri: exports/shop
        lake_root: lake
        retriez: 3
      - name: billing
        format: canal_json
        export_uri: exports/billing
        lake_root: lake
      - name: billing
        format: canal_json
        export_uri: exports/billing2
        lake_root: lake
"""


def test_one_sources_mistake_does_not_stop_loading_another_source(tmp_path: Path) -> None:
    path = write(tmp_path, TWO_SOURCES_ONE_BROKEN)
    loaded = load_sources(path)
    assert [s.name for s in loaded.sources] == ["billing"]
    assert [(b.index, b.name) for b in loaded.broken] == [(0, "shop"), (2, None)]
    assert "sources[0] (shop).retriez: unknown key" in loaded.broken[0].message
    assert "source names must be unique; 'billing' is declared before" in loaded.broken[1].message
    assert load_source(path, "billing").export_uri == str(tmp_path / "exports" / "billing")
    with pytest.raises(ConfigError, match=r"sources\[0\] \(shop\)\.retriez: unknown key"):
        load_source(path, "shop")
    with pytest.raises(ConfigError, match="unknown source 'shoop'; configured sources: billing"):
        load_source(path, "shoop")
