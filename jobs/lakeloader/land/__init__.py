"""Land: copy an hour's export files into the raw zone with a ledger and a manifest (no Spark)."""
