"""Lakeloader: CDC topic exports to Delta tables. This package never imports Airflow."""
