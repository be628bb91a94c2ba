"""Wire-format parsers, one module per format, described and selected by `lakeloader.formats.registry`.

This package imports nothing itself, so that the Spark-free side (config validation, the Airflow DAGs) can read
the registry without importing the parsers.
"""
