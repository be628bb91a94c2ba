"""Framework-free core: configuration, the format registry, zones, object storage, the lake lock and listings;
imports neither pyspark nor airflow."""
