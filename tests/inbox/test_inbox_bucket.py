"""The inbox on the team's storage (FUNDPIPE_INBOX_URL) against an S3 server on loopback."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fundpipe.config import Settings
from fundpipe.submit.bucket import BucketInbox
from fundpipe.submit.ingest import ingest
from inbox.conftest import s3
from worlds.submit import World, write_sheet

SAMPLES = Path(__file__).parents[2] / "data" / "samples"
T0 = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


def _on(world: World, url: str, data_dir: Path | None = None, **pipeline: Any) -> Settings:
    local = {"data_dir": data_dir} if data_dir is not None else {}
    return world.settings.updated(pipeline={"inbox_url": url, **pipeline}, local=local)


def _names(fs: Any, path: str) -> list[str]:
    try:
        return sorted(str(p).rpartition("/")[2] for p in fs.find(path))
    except FileNotFoundError:
        return []


def _claims(fs: Any, bucket: str) -> list[dict[str, Any]]:
    return [json.loads(fs.cat_file(p)) for p in fs.find(f"{bucket}/orgs/org_demo/claims")]


def test_samples_dropped_in_the_bucket_are_processed_on_an_empty_data_dir(
    world: World, bucket: str, s3_endpoint: str
) -> None:
    fs = s3(s3_endpoint)
    for sample in ("distributions_q4.csv", "roster_new_investors.xlsx"):
        fs.put_file(str(SAMPLES / sample), f"{bucket}/orgs/org_demo/inbox/{sample}")
    settings = _on(world, f"s3://{bucket}/orgs/{{org}}/inbox")
    result = ingest(settings, transport=world.transport, settle_s=0)
    assert sorted(f.state for f in result.files) == ["processed", "processed"]
    base = f"{bucket}/orgs/org_demo"
    assert _names(fs, f"{base}/inbox") == []
    assert _names(fs, f"{base}/processing") == []
    assert _names(fs, f"{base}/processed") == [
        "distributions_q4.csv",
        "roster_new_investors.xlsx",
    ]
    assert (
        fs.cat_file(f"{base}/processed/distributions_q4.csv")
        == (SAMPLES / "distributions_q4.csv").read_bytes()
    )
    assert {c["state"] for c in _claims(fs, bucket)} == {"processed"}
    assert len(world.amounts()) == 3  # distributions_q4.csv: 3 distributions, once each
    # a second look finds nothing to do
    assert ingest(settings, transport=world.transport, settle_s=0).files == []


def test_a_bad_sheet_ends_in_rejected_with_its_error_report_beside_it(
    world: World, bucket: str, s3_endpoint: str
) -> None:
    fs = s3(s3_endpoint)
    bad = SAMPLES / "broken" / "negative_amount.csv"
    fs.put_file(str(bad), f"{bucket}/orgs/org_demo/inbox/q4 final.csv")
    before = world.references()
    result = ingest(_on(world, f"s3://{bucket}/orgs/{{org}}/inbox"), transport=world.transport)
    assert [f.state for f in result.files] == ["rejected"]
    assert _names(fs, f"{bucket}/orgs/org_demo/rejected") == [
        "q4_final.csv",
        "q4_final.csv.errors.csv",
        "q4_final.csv.errors.xlsx",
    ]
    report = fs.cat_file(f"{bucket}/orgs/org_demo/rejected/q4_final.csv.errors.csv").decode()
    assert "rejected/" in report
    assert "(1,000.00)" in report
    assert _names(fs, f"{bucket}/orgs/org_demo/inbox") == []
    assert world.references() == before  # nothing at the service


def test_two_workers_process_each_of_20_arriving_files_once(
    world: World, bucket: str, s3_endpoint: str, tmp_path: Path
) -> None:
    fs = s3(s3_endpoint)
    url = f"s3://{bucket}/orgs/{{org}}/inbox"
    inbox = f"{bucket}/orgs/org_demo/inbox"
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    truth: dict[str, list[int]] = {}
    for i in range(20):
        truth |= write_sheet(sheets / f"d{i:02d}.csv", [(f"BKT-{i:02d}", "veh_demo1", [100 + i])])
    done = threading.Event()
    outcomes: list[tuple[str, str, str]] = []
    errors: list[BaseException] = []

    def worker(label: str) -> None:
        settings = _on(world, url, tmp_path / label)
        try:
            while True:
                last = done.is_set()
                result = ingest(settings, transport=world.transport, settle_s=0.05)
                outcomes.extend((label, f.source_file, f.state) for f in result.files)
                if last:
                    return
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(w,)) for w in ("a", "b")]
    for t in threads:
        t.start()
    for i in range(20):
        fs.put_file(str(sheets / f"d{i:02d}.csv"), f"{inbox}/d{i:02d}.csv")
        if i % 5 == 4:  # dropped twice at once: one object, one claim
            fs.put_file(str(sheets / f"d{i:02d}.csv"), f"{inbox}/d{i:02d}.csv")
        time.sleep(0.02)
    deadline = time.monotonic() + 90
    while len({o[1] for o in outcomes}) < 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    for i in (3, 7):  # dropped again after it was processed
        fs.put_file(str(sheets / f"d{i:02d}.csv"), f"{inbox}/d{i:02d}.csv")
    deadline = time.monotonic() + 60
    while (fs.find(inbox) or len(outcomes) < 22) and time.monotonic() < deadline:
        time.sleep(0.2)
    done.set()
    for t in threads:
        t.join(120)
    assert errors == []
    firsts = [o for o in outcomes if o[2] == "processed"]
    assert sorted(o[1] for o in firsts).count("d00.csv") == 1
    assert {o[1] for o in outcomes} == {f"d{i:02d}.csv" for i in range(20)}
    assert {w for w, _, _ in outcomes} <= {"a", "b"}
    # each reference once at the service, with its amounts: nothing created twice
    amounts = world.amounts()
    assert {r: amounts[r] for r in truth} == truth
    assert _names(fs, inbox) == []
    assert _names(fs, f"{bucket}/orgs/org_demo/processing") == []
    redrops = [o for o in outcomes if o[1] in ("d03.csv", "d07.csv")]
    assert len(redrops) == 4  # each read twice (two drops), created once (checked above)


def test_a_multipart_upload_in_progress_is_not_read_until_complete(
    bucket: str, s3_endpoint: str, tmp_path: Path
) -> None:
    fs = s3(s3_endpoint)
    box = BucketInbox(f"s3://{bucket}/orgs/org_demo/inbox")
    handle = fs.open(f"{bucket}/orgs/org_demo/inbox/big.csv", "wb", block_size=5 * 2**20)
    handle.write(b"x" * (6 * 2**20))
    handle.flush()  # the first part is uploaded; the upload is not complete
    assert box.listing() == {}
    assert box.pull(tmp_path / "data", settle_s=0) == {}
    handle.close()
    seen = box.listing()
    assert list(seen) == ["big.csv"]
    box.pull(tmp_path / "data", settle_s=0, before=seen)
    assert (tmp_path / "data" / "processing" / "big.csv").stat().st_size == 6 * 2**20


def test_a_growing_file_on_a_shared_folder_is_not_read_until_it_stops(tmp_path: Path) -> None:
    share = tmp_path / "share" / "org_demo" / "inbox"
    share.mkdir(parents=True)
    box = BucketInbox.of(str(tmp_path / "share" / "{org}" / "inbox"), "org_demo")
    growing = share / "q4.csv"
    growing.write_bytes(b"a" * 100)
    (share / "q4.csv.part").write_bytes(b"b")
    (share / "~$q4.xlsx").write_bytes(b"c")
    first = box.listing()
    assert list(first) == ["q4.csv"]
    with growing.open("ab") as handle:
        handle.write(b"a" * 100)
    data = tmp_path / "data"
    second = box.pull(data, settle_s=0, before=first)
    assert not (data / "processing" / "q4.csv").exists()
    assert growing.exists()
    box.pull(data, settle_s=0, before=second)
    assert (data / "processing" / "q4.csv").read_bytes() == b"a" * 200
    assert not growing.exists()
    assert (share / "q4.csv.part").exists()


def test_a_delete_failing_after_the_copy_leaves_no_file_processed_twice(
    world: World, bucket: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fs = s3(s3_endpoint)
    inbox = f"{bucket}/orgs/org_demo/inbox"
    write_sheet(tmp_path / "q4.csv", [("DEL-1", "veh_demo1", [100_00, 5])])
    fs.put_file(str(tmp_path / "q4.csv"), f"{inbox}/q4.csv")
    settings = _on(world, f"s3://{bucket}/orgs/{{org}}/inbox")
    real = BucketInbox.move_in

    def delete_refused(self: BucketInbox, claim: Any) -> str:
        fail = self.fs.rm_file

        def refuse(path: str) -> None:
            if path.endswith("/inbox/q4.csv"):
                raise PermissionError(13, "Access Denied")
            fail(path)

        monkeypatch.setattr(self.fs, "rm_file", refuse)
        try:
            return real(self, claim)
        finally:
            monkeypatch.setattr(self.fs, "rm_file", fail)

    monkeypatch.setattr(BucketInbox, "move_in", delete_refused)
    first = ingest(settings, transport=world.transport, settle_s=0)
    assert [f.state for f in first.files] == ["processed"]
    assert _names(fs, inbox) == ["q4.csv"]  # the delete failed: the original is still there
    assert _claims(fs, bucket)[0]["deleted"] is False
    monkeypatch.setattr(BucketInbox, "move_in", real)
    second = ingest(settings, transport=world.transport, settle_s=0)
    assert second.files == []  # never read again; its original is deleted now
    assert _names(fs, inbox) == []
    assert [c["deleted"] for c in _claims(fs, bucket)] == [True]
    assert _names(fs, f"{bucket}/orgs/org_demo/processed") == ["q4.csv"]


def test_a_dead_worker_s_claim_is_taken_over_after_its_lease(
    world: World, bucket: str, s3_endpoint: str, tmp_path: Path
) -> None:
    fs = s3(s3_endpoint)
    url = f"s3://{bucket}/orgs/org_demo/inbox"
    write_sheet(tmp_path / "q4.csv", [("DEAD-1", "veh_demo1", [100_00, 5])])
    fs.put_file(str(tmp_path / "q4.csv"), f"{bucket}/orgs/org_demo/inbox/q4.csv")
    now = [T0]
    dead = BucketInbox(url, lease_s=60, clock=lambda: now[0], worker="dead")
    dead.pull(tmp_path / "dead", settle_s=0)  # claimed, moved to processing/, then it died
    assert _names(fs, f"{bucket}/orgs/org_demo/processing") == ["q4.csv"]
    other = BucketInbox(url, lease_s=60, clock=lambda: now[0], worker="other")
    now[0] = T0 + timedelta(seconds=59)
    other.pull(tmp_path / "other", settle_s=0)
    assert not (tmp_path / "other" / "processing" / "q4.csv").exists()
    now[0] = T0 + timedelta(seconds=61)
    other.pull(tmp_path / "other", settle_s=0)
    assert (tmp_path / "other" / "processing" / "q4.csv").exists()
    local = world.settings.updated(local={"data_dir": tmp_path / "other"})
    result = ingest(local, transport=world.transport, settle_s=0)  # the run, on its own disk
    other.push(tmp_path / "other", result)
    assert [f.state for f in result.files] == ["processed"]
    assert world.amounts()["DEAD-1"] == [5, 100_00]
    assert [c["worker"] for c in _claims(fs, bucket)] == ["dead", "other"]
    assert _names(fs, f"{bucket}/orgs/org_demo/processed") == ["q4.csv"]


def test_serve_s_watch_announces_a_settled_file_of_the_bucket_once(
    world: World, tmp_path: Path
) -> None:
    share = tmp_path / "share" / "org_demo" / "inbox"
    share.mkdir(parents=True)
    (share / "q4.csv").write_text("a")
    (share / "q4.csv.part").write_text("b")
    settings = _on(world, str(tmp_path / "share" / "{org}" / "inbox"))
    heard: list[list[Path]] = []
    from fundpipe.app.prefect.watch import watch_buckets

    watch_buckets(settings, heard.append, stop=threading.Event(), looks=[None, None])
    inbox = settings.local.data_dir / "orgs" / "org_demo" / "inbox"
    assert heard == [[inbox / "q4.csv"]]  # settled at the second look, told once
    assert (share / "q4.csv").exists()  # nothing is claimed or moved by the watch
