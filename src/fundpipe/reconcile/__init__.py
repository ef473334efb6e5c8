"""Stage ⑦: the reconciliation views → Parquet exports and the summary numbers."""
