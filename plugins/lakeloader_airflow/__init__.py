"""The Airflow side of lakeloader: DAG factories (and later operators, notifiers, timetables).

This package never imports pyspark; Spark work runs in `jobs/` through spark-submit.
"""
