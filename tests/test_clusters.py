"""The crawl on real clusters started from Maven artifacts (tests/servers/flink.py, spark.py), into a real
OpenSearch node: the same documents, counts, report and exit codes as the direct runner, faults that end
a crawl cleanly, and no process left behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import beamtrawl, report_path
from tests.servers.flink import job_server_jar, mini_cluster, session_cluster
from tests.servers.spark import standalone_cluster
from tests.test_crawl_end_to_end import build_tree
from tests.test_opensearch import all_docs

#: Fields that say when, not what: they differ between any two crawls.
WHEN = {"indexed_at"}
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="module")
def _a_checkout_with_compiled_plugins():
    """The project's ``plugins/`` package with its ``__pycache__``, as any earlier test leaves it: Flink, started
    in a checkout, took it for its own plugin folder and failed (issue 28). Every JVM here must not care."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "plugins")], check=True)
    assert (ROOT / "plugins" / "__pycache__").is_dir()


def _documents(url: str, name: str) -> dict[str, dict]:
    return {i: {k: v for k, v in doc.items() if k not in WHEN} for i, doc in all_docs(url, name).items()}


def _change(root: Path) -> None:
    """New, modified and deleted files and an unreadable folder, as test_crawl_change_recrawl does."""
    (root / "new.txt").write_text("newword arrives", encoding="utf-8")
    mod = root / "mod.txt"
    stat = mod.stat()
    mod.write_text("modword second version", encoding="utf-8")
    os.utime(mod, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1000))
    (root / "gone.txt").unlink()
    (root / "keep").chmod(0)


def _scenario(tmp_path: Path, make_config, crawl, opensearch: str, fresh_index, cluster_options: list[str]) -> None:
    """The core scenario on one tree, crawled by the direct runner and by the cluster, each into its own
    index: after every step both indexes hold the same documents, both reports the same counts and
    problems, and both crawls the same exit code."""
    root = tmp_path / "docs"
    build_tree(root)
    configs = {name: make_config(root, name=f"{name}.yaml",
                                 index={"url": opensearch, "name": fresh_index(name)})
               for name in ("direct", "cluster")}

    def step(expected_code: int) -> dict:
        reports = {}
        for name, config in configs.items():
            done = crawl(config, *(cluster_options if name == "cluster" else ()))
            assert done.code == expected_code, (name, done.report.get("problems"), done.stderr[-3000:])
            reports[name] = done.report
        assert reports["cluster"]["counts"] == reports["direct"]["counts"]
        assert reports["cluster"]["problems"] == reports["direct"]["problems"]
        assert reports["cluster"].get("deleted_urls") == reports["direct"].get("deleted_urls")
        documents = {name: _documents(opensearch, _index_name(config)) for name, config in configs.items()}
        assert documents["cluster"] == documents["direct"]
        return reports["cluster"]

    first = step(0)
    assert first["counts"]["written"] == 11
    _change(root)
    try:
        changed = step(1)
    finally:
        (root / "keep").chmod(0o755)
    assert (changed["counts"]["new"], changed["counts"]["changed"], changed["counts"]["deleted"]) == (1, 1, 1)
    unchanged = step(0)
    assert unchanged["counts"]["read"] == 0 and unchanged["counts"]["written"] == 0
    assert unchanged["counts"]["unchanged"] == 11


def _index_name(config: Path) -> str:
    import yaml

    return yaml.safe_load(config.read_text())["index"]["name"]


@pytest.fixture(scope="module")
def flink(tmp_path_factory):
    with session_cluster(tmp_path_factory.mktemp("flink")) as cluster:
        yield cluster


def test_core_scenario_on_a_flink_session_cluster_equals_the_direct_runner(tmp_path, make_config, crawl,
                                                                             opensearch, fresh_index, flink):
    _scenario(tmp_path, make_config, crawl, opensearch, fresh_index, flink.options)


def test_core_scenario_on_a_spark_standalone_cluster_equals_the_direct_runner(tmp_path, make_config, crawl,
                                                                              opensearch, fresh_index, tmp_path_factory):
    with standalone_cluster(tmp_path_factory.mktemp("spark")) as spark:
        _scenario(tmp_path, make_config, crawl, opensearch, fresh_index, spark.options)


def test_a_delta_table_written_from_the_flink_session_cluster_equals_the_direct_runner(tmp_path, make_config, crawl,
                                                                                      flink):
    """The open-table target on the cluster (no search server): its workers stage the Parquet files, the
    driver commits them; after every step of the core scenario both tables hold the same documents."""
    from tests.test_table import change, delta_documents

    root = tmp_path / "docs"
    build_tree(root)
    configs = {name: make_config(root, name=f"{name}.yaml", index={"table": f"{name}.delta"})
               for name in ("direct", "cluster")}

    def step(expected_code: int) -> dict:
        reports = {}
        for name, config in configs.items():
            done = crawl(config, *(flink.options if name == "cluster" else ()))
            assert done.code == expected_code, (name, done.report.get("problems"), done.stderr[-3000:])
            reports[name] = done.report
        assert reports["cluster"]["counts"] == reports["direct"]["counts"]
        assert delta_documents(str(tmp_path / "cluster.delta")) == delta_documents(str(tmp_path / "direct.delta"))
        return reports["cluster"]

    assert step(0)["counts"]["written"] == 11
    change(root)
    try:
        changed = step(1)
    finally:
        (root / "keep").chmod(0o755)
    assert (changed["counts"]["new"], changed["counts"]["changed"], changed["counts"]["deleted"]) == (1, 1, 1)
    assert step(0)["counts"]["unchanged"] == 11


def test_a_web_crawl_on_flink_equals_the_direct_runner(tmp_path, make_config, crawl, opensearch, fresh_index, flink):
    from tests.servers.website import Website
    from tests.test_http_crawl import build

    site = Website()
    site.start()
    try:
        build(site, 1)
        reports, docs = {}, {}
        for name, options in (("direct", ()), ("cluster", flink.options)):
            config = make_config(tmp_path, name=f"{name}.yaml", start=[{"url": site.base + "/"}],
                                 whitelist=[{"prefix": site.base + "/"}], url_cleaners=["sid=[^&]*"],
                                 http={"delay": 0, "concurrency_per_host": 2, "read_timeout": 2, "total_timeout": 20,
                                       "max_body": "100 KiB", "max_cycle_count": 2,
                                       "max_query_strings_per_path": 5},
                                 index={"url": opensearch, "name": fresh_index(name)})
            done = crawl(config, *options)
            reports[name], docs[name] = done.report, _documents(opensearch, fresh_index(name))
            assert done.code == 1, done.stderr[-2000:]  # the site has pages that fail on purpose
        assert reports["cluster"]["counts"] == reports["direct"]["counts"]
        assert docs["cluster"] == docs["direct"]
    finally:
        site.stop()


def test_a_taskmanager_killed_mid_crawl_fails_cleanly_and_a_rerun_converges(tmp_path, os_config, crawl, opensearch,
                                                                           flink):
    root = tmp_path / "docs"
    for i in range(1500):
        (root / f"d{i // 100}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i // 100}" / f"f{i}.txt").write_text(f"document number{i} about walruses {i % 7}")
    config = os_config(root)
    name = _index_name(config)
    assert crawl(config, *flink.options).code == 0
    shutil.rmtree(root / "d0")  # 100 documents vanish: a sound crawl would delete them
    for i in range(1500, 3000):
        (root / "new").mkdir(exist_ok=True)
        (root / "new" / f"f{i}.txt").write_text(f"document number{i} about narwhals")

    def kill_when_writing():
        deadline = time.monotonic() + 600
        before = len(all_docs(opensearch, name))
        while time.monotonic() < deadline and len(all_docs(opensearch, name)) == before:
            time.sleep(0.2)
        flink.kill("taskmanager")

    killer = threading.Thread(target=kill_when_writing)
    killer.start()
    failed = crawl(config, *flink.options)
    killer.join()
    flink.restart("taskmanager")
    assert failed.code == 2, failed.stderr[-3000:]
    fatal = [line for line in failed.stdout.splitlines() if line.startswith("FAILED:")]
    assert len(fatal) == 1 and "Traceback" not in failed.stdout, failed.stdout
    assert failed.report["counts"]["deleted"] == 0
    assert sum(1 for d in all_docs(opensearch, name).values() if "/d0/" in d["url"]) == 100  # no delete ran

    time.sleep(5)  # the TaskManager registers again
    rerun = crawl(config, *flink.options)
    assert rerun.code == 0, rerun.stderr[-3000:]
    indexed = all_docs(opensearch, name)
    assert len(indexed) == 2900 and not any("/d0/" in d["url"] for d in indexed.values())


def test_an_unreachable_cluster_is_one_line_before_any_work(tmp_path, os_config):
    root = tmp_path / "docs"
    build_tree(root)
    config = os_config(root)
    for options in (["--runner=PortableRunner", "--job_endpoint=localhost:9", "--environment_type=LOOPBACK"],
                    ["--runner", "flink", "--flink_master=localhost:9", "--environment_config=localhost:9"],
                    ["--runner", "spark", "--spark_master_url=spark://localhost:9",
                     "--environment_config=localhost:9"]):
        started = time.monotonic()
        done = beamtrawl("crawl", str(config), *options)
        assert done.returncode == 2 and time.monotonic() - started < 60
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        assert len(lines) == 1 and "cannot be reached" in lines[0] and "localhost:9" in lines[0], lines
        assert not report_path(config).exists()  # nothing was crawled


def test_a_cluster_whose_workers_cannot_start_is_one_line_and_exit_2_within_the_bound(tmp_path, os_config, flink):
    """The session cluster handed Beam's own worker pool, started from another folder with a ``python`` first on
    PATH that has no apache_beam (how the cluster was once started by hand): its workers die at once, and the
    crawl, which waited for them for ever, ends within the bound with one line naming the pool, exit 2,
    before the index is touched (runners/worker_pool.py)."""
    from beamtrawl.runners.worker_pool import WORKER_START_TIMEOUT_S

    from tests.servers.jvm import free_ports, start, stop, wait_port

    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    system = next(p for p in ("/usr/bin/python3", "/bin/python3") if os.access(p, os.X_OK))
    (bin_folder / "python").symlink_to(system)
    (port,) = free_ports(1)
    log = tmp_path / "beam-pool.log"
    pool = start([sys.executable, "-P", "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
                 log, {"PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}"}, cwd=tmp_path)
    try:
        wait_port(port, pool, log)
        root = tmp_path / "docs"
        build_tree(root)
        config = os_config(root)
        options = [o for o in flink.options if not o.startswith("--environment_config=")]
        started = time.monotonic()
        done = beamtrawl("crawl", str(config), *options, f"--environment_config=localhost:{port}")
        took = time.monotonic() - started
    finally:
        stop(pool)
    assert done.returncode == 2 and took < WORKER_START_TIMEOUT_S + 60, (took, done.stderr[-3000:])
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and f"the worker pool at localhost:{port}" in lines[0], lines
    assert "did not connect" in lines[0] and "nothing was crawled" in lines[0], lines
    assert "No module named 'apache_beam'" in log.read_text()
    assert not report_path(config).exists()


def _jvms() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "beamtrawl-flink-job-server.jar"], capture_output=True, text=True,
                         check=False).stdout
    return {int(pid) for pid in out.split()}


def test_the_command_stops_the_job_server_beam_started(tmp_path, os_config, crawl):
    root = tmp_path / "docs"
    build_tree(root)
    config = os_config(root)
    before = _jvms()
    done = crawl(config, "--runner", "flink", f"--flink_job_server_jar={job_server_jar()}")
    assert done.code == 0, (done.report.get("fatal"), done.stdout[-2000:], done.stderr[-3000:])
    assert _jvms() - before == set()  # no JVM outlives the command
    assert "INFO org.apache.flink" not in done.stdout + done.stderr


def test_the_job_server_over_a_flink_mini_cluster(tmp_path, os_config, crawl):
    root = tmp_path / "docs"
    build_tree(root)
    with mini_cluster(tmp_path) as flink:
        done = crawl(os_config(root), *flink.options)
    assert done.code == 0 and done.counts["written"] == 11, done.stderr[-3000:]


def test_a_bucket_crawled_on_flink_into_opensearch_and_a_table_with_the_work_folder_in_a_bucket_equals_the_direct_runner(
        tmp_path, flink, s3_server, opensearch, fresh_index, monkeypatch):
    """No shared disk (issue 30): the documents, the Delta table and the work folders are all in buckets of the S3
    server on loopback, and the bucket is crawled into OpenSearch too; after a first crawl and after a change, the
    cluster's report counts, table and index equal the direct runner's, and each crawl's work folder keeps nothing
    but its history."""
    import json
    import uuid

    import boto3
    from deltalake import DeltaTable

    from tests.test_object_stores import OBJECTS, crawl_file
    from tests.test_table import _row

    login = s3_server.storage_options()
    for variable, value in login.items():  # the driver's: boto3's chain, as a user's would be
        monkeypatch.setenv(variable, value)
    client = boto3.client("s3", endpoint_url=s3_server.endpoint)
    name = f"bt-{uuid.uuid4().hex[:12]}"
    lake = f"{name}-lake"
    for bucket in (name, lake):
        client.create_bucket(Bucket=bucket)
    for key, text in OBJECTS.items():
        client.put_object(Bucket=name, Key=key, Body=text.encode())
    # The pool of workers was started before this test, without that environment: what they need travels in the
    # pipeline — the source's login (a credentials entry), the table's (its storage_options) and the work folder's
    # (Beam's S3 options).
    beam = [f"--s3_endpoint_url={s3_server.endpoint}", f"--s3_access_key_id={login['AWS_ACCESS_KEY_ID']}",
            f"--s3_secret_access_key={login['AWS_SECRET_ACCESS_KEY']}", "--s3_region_name=us-east-1"]
    targets = {"table": lambda runner: {"table": f"s3://{lake}/{runner}", "storage_options": {
                   **login, "AWS_SECRET_ACCESS_KEY": "${AWS_SECRET_ACCESS_KEY}"}},
               "opensearch": lambda runner: {"url": opensearch, "name": fresh_index(runner)}}
    configs = {}
    for runner in ("direct", "cluster"):
        for target, index in targets.items():
            (tmp_path / runner / target).mkdir(parents=True)
            configs[runner, target] = crawl_file(
                tmp_path / runner / target, f"s3://{name}/docs/",
                s3={"endpoint_url": s3_server.endpoint, "region": "us-east-1"},
                credentials=[{"url": f"s3://{name}/", "username": login["AWS_ACCESS_KEY_ID"],
                              "password": "${AWS_SECRET_ACCESS_KEY}"}],
                index=index(runner), work_dir=f"s3://{lake}/{runner}-{target}-work",
                report=str(tmp_path / runner / target / "report.json"))

    def written(runner: str, target: str) -> dict:
        if target == "opensearch":
            return _documents(opensearch, fresh_index(runner))
        return {row["id"]: _row(row) for row in DeltaTable(
            f"s3://{lake}/{runner}", storage_options=s3_server.storage_options()).to_pyarrow_table().to_pylist()}

    def step() -> dict:
        reports, indexes = {}, {}
        for (runner, target), config in configs.items():
            done = beamtrawl("crawl", str(config), *beam,
                             *(flink.options if runner == "cluster" else ("--direct_num_workers=2",)))
            reports[runner, target] = json.loads((config.parent / "report.json").read_text(encoding="utf-8"))
            assert done.returncode == 0, (runner, target, reports[runner, target].get("fatal"), done.stderr[-3000:])
            indexes[runner, target] = written(runner, target)
            work = f"{runner}-{target}-work/"
            kept = [o["Key"] for o in client.list_objects_v2(Bucket=lake, Prefix=work).get("Contents", [])]
            assert all(key.startswith(f"{work}history/") for key in kept), kept
        for target in targets:
            assert reports["cluster", target]["counts"] == reports["direct", target]["counts"]
            assert reports["cluster", target]["problems"] == reports["direct", target]["problems"]
            assert indexes["cluster", target] == indexes["direct", target]
        assert reports["cluster", "opensearch"]["counts"] == reports["cluster", "table"]["counts"]
        return reports["cluster", "opensearch"]

    assert step()["counts"]["written"] == 4
    client.delete_object(Bucket=name, Key="docs/puffin.txt")
    client.put_object(Bucket=name, Key="docs/birds/gannet.txt", Body=b"a gannet dives for mackerel")
    changed = step()
    assert (changed["counts"]["changed"], changed["counts"]["deleted"], changed["counts"]["unchanged"]) == (1, 1, 2)
