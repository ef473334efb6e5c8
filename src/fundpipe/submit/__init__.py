"""Stage ④: exactly once — the inbox, the ledger, the service snapshot, execution, and `ingest`.

`ingest.ingest` orchestrates stages ①–④ and returns data (it prints nothing).
"""
