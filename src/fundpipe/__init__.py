"""fundpipe: fund distribution sheets in, exactly-once payments out, reconciled in DuckDB."""

__version__ = "0.1.0"
