"""An empty warehouse kept once per schema, copied instead of migrating every new warehouse.

Creating a warehouse applies every migration of `schemas/warehouse.sql` one by one, then
`schemas/views.sql`, and DuckDB binds each view as it is created — the stacked `exceptions`
views (each layer reads the one below): CPU paid by every first sync. The result is the same
file every time for the same schema and the same DuckDB, so the first warehouse built leaves a
copy in the cache folder (`FUNDPIPE_CACHE_DIR`, by default `$XDG_CACHE_HOME/fundpipe` or
`~/.cache/fundpipe`), named by a digest of the schema file's text, the views file's text and
DuckDB's version, and the next new warehouse starts as a copy of it. The copy then goes through
the usual opening: every block read (`fundpipe.warehouse.integrity`), every migration's
checksum checked against the schema file, any migration the copy lacks applied, the views run
again if their checksum differs; its `applied_at` times are set to the copy's time. The cache is only ever a shortcut: a copy that cannot be read or written is
skipped, and the warehouse is migrated as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
from pathlib import Path

import duckdb

__all__ = ["copy_template", "keep_template", "template_file"]

log = logging.getLogger(__name__)


def template_file(cache_dir: Path, schema_text: str, views_text: str = "") -> Path:
    """Where the empty warehouse of `schema_text` and `views_text` (under this DuckDB) is kept
    in `cache_dir`."""
    keyed = f"{duckdb.__version__}\n{schema_text}" + (f"\n{views_text}" if views_text else "")
    digest = hashlib.sha256(keyed.encode()).hexdigest()
    return cache_dir / f"warehouse-{digest[:24]}.duckdb"


def copy_template(cache_dir: Path, schema_text: str, target: Path, *, views_text: str = "") -> bool:
    """Make `target` (which must not exist) a copy of the kept empty warehouse; False when
    there is none (or it cannot be copied): the caller then migrates as usual."""
    source = template_file(cache_dir, schema_text, views_text)
    if not source.is_file():
        return False
    partial = target.with_name(f"{target.name}.template-{os.getpid()}")
    try:
        shutil.copyfile(source, partial)
        os.link(partial, target)  # never over a file that appeared meanwhile
    except OSError as error:
        log.debug("warehouse template %s not used: %s", source, error)
        return False
    finally:
        partial.unlink(missing_ok=True)
    log.info("warehouse %s created from the template %s", target, source)
    return True


def keep_template(cache_dir: Path, schema_text: str, built: Path, *, views_text: str = "") -> None:
    """Keep a copy of `built` — a warehouse just created by migrating `schema_text` and running
    `views_text`, closed, holding nothing else — as the template of later ones (best effort:
    errors are logged)."""
    wal = built.with_name(built.name + ".wal")
    if wal.exists():  # not closed cleanly: the file alone is not the whole warehouse
        return
    kept = template_file(cache_dir, schema_text, views_text)
    partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, partial)
        partial.replace(kept)  # whole or absent, whoever else writes it meanwhile
    except OSError as error:
        log.debug("warehouse template %s not kept: %s", kept, error)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
