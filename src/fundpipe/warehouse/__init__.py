"""Stage ⑥: the DuckDB warehouse file — opening it, its lock, its migrations."""
