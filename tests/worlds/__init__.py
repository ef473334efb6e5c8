"""Worlds the tests build: sheets, a seeded sandbox with a data directory, a known warehouse."""
