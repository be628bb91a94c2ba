"""Silver tables as Airflow Assets: one event per table an hour changed, with the hour's counts."""

from __future__ import annotations

from lakeloader_airflow.assets import silver_alias, silver_asset, silver_events, table_uri


def test_a_table_location_becomes_its_asset_uri():
    assert table_uri("/lake/silver/shop/shop/orders") == "file:///lake/silver/shop/shop/orders"
    assert table_uri("file:///lake/silver/shop/a%20b") == "file:///lake/silver/shop/a%2520b"  # kept as named
    assert table_uri("s3://lake/root/silver/shop/shop/orders") == "s3://lake/root/silver/shop/shop/orders"
    assert table_uri("/lake/silver/shop/shop/bad name~1f2e") == "file:///lake/silver/shop/shop/bad%20name~1f2e"


def test_every_table_the_hour_wrote_gets_one_event_with_the_hours_counts():
    summary = {
        "hour": "2026-11-21T05",
        "silver_tables": {
            "shop.orders": {"changes": 12, "duplicates": 1, "rows": 40, "version": 7, "inserted": 5, "actions": 11,
                            "uri": "/lake/silver/shop/shop/orders"},
            "shop.dropped": {"changes": 0, "rows": 0, "uri": "/lake/silver/shop/shop/dropped", "version": None},
        },
    }  # fmt: skip

    events = silver_events("shop", summary)

    assert [(asset.name, asset.uri) for asset, _ in events] == [
        ("lakeloader.shop.shop.dropped", "file:///lake/silver/shop/shop/dropped"),
        ("lakeloader.shop.shop.orders", "file:///lake/silver/shop/shop/orders"),
    ]
    assert events[1][1] == {
        "hour": "2026-11-21T05", "changes": 12, "duplicates": 1, "rows": 40, "version": 7, "inserted": 5,
    }  # fmt: skip
    assert silver_alias("shop").name == "lakeloader_shop_silver"
    assert silver_asset("shop", "shop.orders", "/x").name == "lakeloader.shop.shop.orders"
