"""Stage ⑤: pages of the service → Arrow → merged into the warehouse."""
