"""Apply: key actions per table, multisets, schema changes and the silver writes."""
