"""Wire-format parsers, one module per format, described and selected by `lakeloader.core.format_registry`.

This package imports nothing itself, so that the Spark-free side (config validation, the Airflow DAGs) can read
the registry without importing the parsers.
"""
