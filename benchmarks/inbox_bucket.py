"""A 1,000-file drop on the team's bucket: list, claim and move against the store's bare calls.

    python benchmarks/inbox_bucket.py [--files 1000]

moto's S3 server runs on loopback (as the record's tests use it). Measured in one run:

- **bare** (the baseline): one listing of the inbox, then a put and a delete of an object per
  file, 8 files at a time as the inbox takes them — the least any claim-and-move needs of the
  store;
- **inbox**: `BucketInbox.pull` over the same drop — two listings (settled), one claim per file
  (an exclusive create), the move to ``processing/`` (copy, verify, delete) and the fetch into
  the local ``processing/`` folder, 8 files at a time (an object store's inbox does).

Prints both times and one `target` line: inbox ≤ 2 × bare.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import targets

GOAL_RATIO = 2.0
#: As many files at once as the inbox takes on an object store (`fundpipe.submit.bucket`).
CONCURRENCY = 8


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    """Run the drop and print the target line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    import fsspec
    from moto.server import ThreadedMotoServer

    from fundpipe.submit.bucket import BucketInbox

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ[name] = "testing"
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    fsspec.config.conf["s3"] = {"endpoint_url": endpoint}
    try:
        fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False)
        bucket = f"fund-ops-{uuid.uuid4().hex[:8]}"
        fs.mkdir(bucket)
        body = b"Distribution Name,Vehicle\n" + b"x" * 2000
        bare_dir, inbox = f"{bucket}/bare", f"{bucket}/orgs/org_demo/inbox"
        for i in range(args.files):
            fs.pipe_file(f"{bare_dir}/in/d{i:04d}.csv", body)
            fs.pipe_file(f"{inbox}/d{i:04d}.csv", body)

        def bare_one(entry: dict[str, object]) -> None:
            name = str(entry["name"]).rpartition("/")[2]
            fs.pipe_file(f"{bare_dir}/claims/{name}", b"{}")
            fs.rm_file(str(entry["name"]))

        start = time.perf_counter()
        listed = fs.ls(f"{bare_dir}/in", detail=True, refresh=True)
        with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
            list(pool.map(bare_one, listed))
        bare = time.perf_counter() - start

        box = BucketInbox(f"s3://{inbox}")
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            box.pull(Path(tmp), settle_s=0)
            pulled = time.perf_counter() - start
            fetched = len(list((Path(tmp) / "processing").glob("*.csv")))
        assert fetched == args.files, f"{fetched} of {args.files} files pulled"
        print(f"bare list/put/delete: {bare:.2f} s for {len(listed)} files")
        print(f"inbox list/claim/move/fetch: {pulled:.2f} s for {fetched} files")
        print(
            targets.ratio(
                "inbox_bucket_drop", pulled, bare, GOAL_RATIO, against="bare calls", unit=" s"
            )
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
