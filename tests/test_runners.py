"""Launch paths of every engine, as far as they go without the engine: options, refusals, graph, staging."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
import uuid
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.stager import Stager
from apache_beam.testing.util import assert_that, equal_to
from beamtrawl.pipeline import graph
from beamtrawl.pipeline.config import load_config
from beamtrawl.pipeline.crawl import preparation_fingerprint
from beamtrawl.runners import RunnerError, dataflow, direct, flink, pipeline_options, spark
from beamtrawl.runners.options import option
from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index.opensearch import OpenSearchIndex

from tests.conftest import beamtrawl_command, report_path

DATAFLOW = ["--project=my-proj-123", "--region=europe-west1", "--temp_location=gs://beamtrawl-temp/tmp"]
REMOTE = OpenSearchIndex("http://127.0.0.1:9200", "docs")


def test_direct_defaults_give_way_to_the_command_line():
    args = direct.arguments(["--direct_num_workers=1"])
    assert option(args, "runner") == "FnApiRunner" and option(args, "direct_num_workers") == "1"
    assert option(args, "direct_running_mode") == "multi_processing"


def test_direct_workers_are_processes_running_our_worker_command():
    options = PipelineOptions(direct.arguments(["--direct_num_workers=2"]))
    runner = direct.runner(options)
    assert runner._default_environment.command_string.endswith("-m beamtrawl.runners.local_worker")
    with beam.Pipeline(runner=runner, options=options) as p:
        here = os.getpid()  # lambdas reach the workers by value, test functions would not
        elsewhere = p | beam.Create(range(50)) | beam.Map(lambda _, test=here: os.getpid() != test)
        assert_that(elsewhere, equal_to([True] * 50))
    for mode in ("multi_threading", "in_memory"):  # what the user chose stays Beam's to run
        assert direct.runner(PipelineOptions(direct.arguments([f"--direct_running_mode={mode}"]))) is None


FORKED = """\
import json, os, sys
from beamtrawl.runners.beam_import import import_beam
import_beam()
from beamtrawl.runners import direct, forked_workers
forked_workers.prestart(3)
forked = [pid for pid, _pipe in forked_workers._WAITING]
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
options = PipelineOptions(direct.arguments(["--direct_num_workers=2"]))
folder = sys.argv[1]
with beam.Pipeline(runner=direct.runner(options), options=options) as p:
    _ = p | beam.Create(range(20)) | beam.Map(
        lambda _: open(os.path.join(folder, str(os.getpid())), "w").write(str(__import__("gc").get_freeze_count())))
print(json.dumps({"forked": forked, "left": forked_workers._WAITING}))
"""


def test_local_workers_are_forked_from_the_command_and_unused_ones_end(tmp_path):
    """runners/forked_workers.py: the pipeline's two workers are two of the three forked before it was built (no
    new Python, no imports), with what the command had loaded left out of their collections (which would copy
    every page of it); the third ends when the run does."""
    done = subprocess.run([sys.executable, "-c", FORKED, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, check=True)
    told = json.loads(done.stdout.splitlines()[-1])
    worked = {int(name) for name in os.listdir(tmp_path)}
    assert worked and worked <= set(told["forked"][:2]) and told["left"] == []
    assert all(int((tmp_path / str(pid)).read_text()) > 10_000 for pid in worked)
    assert not Path(f"/proc/{told['forked'][2]}").exists()


def test_a_stage_with_one_part_of_input_runs_on_one_worker_and_a_larger_one_on_all(tmp_path):
    """runners/direct.py one_worker_for_one_part: no empty bundle on the second worker for a one-element stage;
    a stage with input enough for both still runs on both."""
    class Bundles(beam.DoFn):  # defined here: the workers get it by value (they cannot import tests)
        """Leaves a file per bundle it finishes: FOLDER/LABEL-PID-N."""

        def __init__(self, folder: str, label: str):
            self.folder, self.label = folder, label

        def start_bundle(self):
            self.seen = 0

        def process(self, element):
            self.seen += 1
            yield element

        def finish_bundle(self):
            path = os.path.join(self.folder, f"{self.label}-{os.getpid()}-{self.seen}")
            with open(path if not os.path.exists(path) else f"{path}-{time.monotonic_ns()}", "w"):
                pass

    options = PipelineOptions(direct.arguments(["--direct_num_workers=2"]))
    with beam.Pipeline(runner=direct.runner(options), options=options) as p:
        _ = p | "One" >> beam.Create([1]) | "OneBundles" >> beam.ParDo(Bundles(str(tmp_path), "one"))
        _ = (p | "Many" >> beam.Create(range(200)) | beam.Reshuffle()
             | "ManyBundles" >> beam.ParDo(Bundles(str(tmp_path), "many")))
    one = [name.split("-") for name in os.listdir(tmp_path) if name.startswith("one-")]
    many = [name.split("-") for name in os.listdir(tmp_path) if name.startswith("many-")]
    assert [int(seen) for _label, _pid, seen, *_ in one] == [1]
    assert len({pid for _label, pid, *_ in many}) == 2 and sum(int(seen) for _l, _p, seen, *_ in many) == 200


def test_a_flatten_that_alone_reads_a_flatten_takes_its_inputs_and_the_elements_stay_the_same():
    """runners/flattens.py: the inner Flatten is gone (no stage that only copies its buffer), one read twice stays,
    and the outer Flatten gives every input as often as the nested ones did."""
    from beamtrawl.runners import flattens

    options = PipelineOptions(direct.arguments(["--direct_num_workers=1"]))
    p = beam.Pipeline(runner=direct.runner(options), options=options)
    a, b, c = (p | name >> beam.Create(values) for name, values in (("A", [1, 2]), ("B", [3]), ("C", [4])))
    inner = (a, b) | "Inner" >> beam.Flatten()
    shared = (b, c) | "Shared" >> beam.Flatten()
    _ = shared | "AlsoShared" >> beam.Map(lambda x: x)
    outer = ((inner,) | "Deeper" >> beam.Flatten(), c, shared, a) | "Outer" >> beam.Flatten()
    assert_that(outer, equal_to([1, 2, 3, 4, 3, 4, 1, 2]))
    merged = {t.unique_name: t for t in flattens.merged(p.to_runner_api()).components.transforms.values()}
    assert "Inner" not in merged and "Deeper" not in merged and "Shared" in merged
    assert len(merged["Outer"].inputs) == 5  # a, b (from Inner), c, Shared's output, a
    p.run().wait_until_finish()


def _preparing_processes(mark: bytes) -> set[str]:
    """The preparing processes whose environment holds ``mark``: those of one crawl, not of a crawl another test
    runs beside it (they inherit the command's environment, whether forked or started)."""
    found = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"beamtrawl.transforms.preparators.isolation" in (proc / "cmdline").read_bytes() \
                    and mark in (proc / "environ").read_bytes():
                found.add(proc.name)
        except OSError:  # it ended meanwhile
            pass
    return found


def test_a_crawl_leaves_no_preparing_process_behind(tmp_path, make_config):
    """The local workers end without Python's shutdown; they still end their preparing children."""
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(20):
        (root / f"{i}.txt").write_text(f"document {i}")
    (root / "page.html").write_text("<html><body><p>a page the preparing child reads</p></body></html>")
    mark = uuid.uuid4().hex
    config = make_config(root)
    done = subprocess.run(beamtrawl_command("crawl", str(config), "--direct_num_workers=2"), capture_output=True,
                          text=True, timeout=600, check=False, cwd=Path(__file__).resolve().parent.parent,
                          env={**os.environ, "BEAMTRAWL_TEST_CRAWL": mark})
    report = json.loads(report_path(config).read_text(encoding="utf-8"))
    assert done.returncode == 0 and report["counts"]["written"] == 21, done.stderr[-2000:]
    assert not _preparing_processes(f"BEAMTRAWL_TEST_CRAWL={mark}".encode())


def test_a_crawl_holds_the_allocator_of_its_processes_unless_the_user_chose():
    """runners/allocator.py: the command sets glibc's arenas and thresholds for itself and, through the environment,
    for the processes it starts (workers, preparing children); a value the user gave stays."""
    show = ("import os; from beamtrawl.runners import allocator; allocator.bound(); "
            "print(*(os.environ[v] for _, v, _ in allocator.SETTINGS))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    given = subprocess.run([sys.executable, "-P", "-c", show], capture_output=True, text=True, check=True, env=env)
    assert given.stdout.split() == ["2", "131072", "131072"]
    own = subprocess.run([sys.executable, "-P", "-c", show], capture_output=True, text=True, check=True,
                         env={**env, "MALLOC_ARENA_MAX": "4"})
    assert own.stdout.split() == ["4", "131072", "131072"]


def test_flink_local_and_cluster():
    local = flink.arguments([])
    assert (option(local, "flink_master"), option(local, "environment_type")) == ("[local]", "LOOPBACK")
    cluster = flink.arguments(["--flink-master", "jm:8081", "--environment_config=localhost:50000"])
    assert (option(cluster, "flink_master"), option(cluster, "environment_type")) == ("jm:8081", "EXTERNAL")
    with pytest.raises(RunnerError, match="--environment_config"):
        flink.arguments(["--flink_master=jm:8081"])
    with pytest.raises(RunnerError, match="must be \\[local\\] or HOST:PORT"):
        flink.arguments(["--flink_master=jm", "--environment_config=x:1"])


def test_spark_master_url():
    assert option(spark.arguments(["--spark_master_url=local[2]"]), "environment_type") == "LOOPBACK"
    with pytest.raises(RunnerError, match="local\\[N\\] or spark://"):
        spark.arguments(["--spark_master_url=yarn"])


@pytest.mark.parametrize(("args", "message"), [
    ([], "give --project, --region, --temp_location"),
    (["--project=X", "--region=europe-west1", "--temp_location=gs://b/t"], "not a Google Cloud project id"),
    (["--project=my-proj-123", "--region=europe", "--temp_location=gs://b/t"], "not a region"),
    (["--project=my-proj-123", "--region=europe-west1", "--temp_location=/tmp"], "must be a gs:// path"),
])
def test_dataflow_options_are_validated(args, message):
    with pytest.raises(RunnerError, match=message):
        dataflow.arguments(args)


def test_refusals_name_the_reason(tmp_path):
    embedded = EmbeddedIndex(str(tmp_path / "x.sqlite"))
    with pytest.raises(RunnerError, match="embedded SQLite index can only be written by the direct runner"):
        pipeline_options("flink", [], embedded)
    with pytest.raises(RunnerError, match="DaskRunner loses data"):
        pipeline_options("DaskRunner", [], REMOTE)
    with pytest.raises(RunnerError, match="Prism"):
        pipeline_options("prism", [], REMOTE)
    assert pipeline_options("flink", [], REMOTE).get_all_options()["runner"] == "FlinkRunner"


def test_dataflow_graph_is_built_and_the_package_staged(tmp_path):
    corpus = Path(__file__).resolve().parent.parent / "examples" / "corpus"
    config_file = tmp_path / "c.yaml"
    config_file.write_text(f'start: [{{url: "{corpus}"}}]\nindex: {{path: x.sqlite}}\n')
    config = load_config(str(config_file))
    target = EmbeddedIndex(config.index.path)  # the graph only: Dataflow itself would need OpenSearch
    target.prepare()
    p = beam.Pipeline(options=PipelineOptions(dataflow.arguments(DATAFLOW)))
    assert type(p.runner).__name__ == "DataflowRunner"
    graph.build(p, config, target, preparation_fingerprint(config.preparators, config),
                graph.Pass("gs://beamtrawl-temp/work"))
    transforms = {t.unique_name for t in p.to_runner_api().components.transforms.values()}
    assert {"Discover", "Freshness", "Prepare", "WriteIndex", "DeleteLast"} <= transforms

    package = Stager._build_setup_package(dataflow.SETUP_FILE, str(tmp_path))
    with tarfile.open(package) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"pipeline/cli.py", "transforms/index/opensearch.py", "runners/dataflow.py"} <= names


def test_no_grouping_shuffles_a_record_a_java_runner_cannot_decode(tmp_path):
    """Flink's and Spark's job servers decode the coder of everything they group; the schema of a Python record
    (RowCoder, its fields ``pythonsdk_any``) failed them ("Failed to decode Schema … TYPEINFO_NOT_SET"). A
    grouping of records must key plain values (combiners excepted: the runner lifts them)."""
    from apache_beam.portability.api import schema_pb2

    config_file = tmp_path / "c.yaml"
    config_file.write_text(f'start: [{{url: "{tmp_path.as_uri()}"}}, {{url: "http://127.0.0.1:9/"}}]\n'
                           'index: {path: x.sqlite}\naccess_control: [{posix: {}}]\n')
    config = load_config(str(config_file))
    target = EmbeddedIndex(str(tmp_path / "x.sqlite"))
    target.prepare()
    p = beam.Pipeline()
    graph.build(p, config, target, preparation_fingerprint(config.preparators, config),
                graph.Pass(str(tmp_path / "work")))
    components = p.to_runner_api().components

    def schemas(coder_id: str):
        coder = components.coders[coder_id]
        if coder.spec.urn == "beam:coder:row:v1":
            yield schema_pb2.Schema.FromString(coder.spec.payload)
        for component in coder.component_coder_ids:
            yield from schemas(component)

    shuffled = {t.unique_name: [s.fields[0].name for s in schemas(
                    components.pcollections[next(iter(t.inputs.values()))].coder_id)]
                for t in components.transforms.values() if t.spec.urn == "beam:transform:group_by_key:v1"
                and "/CombinePerKey/" not in t.unique_name}
    assert len(shuffled) > 5 and {name: rows for name, rows in shuffled.items() if rows} == {}


def test_two_workers_dying_at_once_stop_the_crawl():
    """Both deaths may be heard before the main thread handles the first signal (seen as a crawl hung for 10
    minutes in the suite, under load): the crawl must still stop, once."""
    def die():
        raise RuntimeError("Worker subprocess exited with return code 3")

    with pytest.raises(direct.WorkerDied, match="exit code 3"), direct._failing_on_worker_death():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # the main thread busy: signals wait
        try:
            for _ in range(2):
                worker = threading.Thread(target=die, name="run_worker")
                worker.start()
                worker.join()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        time.sleep(5)  # the handler runs here, at the latest



def test_what_is_written_while_the_runners_data_stream_flushes_is_sent():
    """Issue 33's cause: FnApiRunner sends a bundle's input through a stream that a thread flushes every
    second; a flush copies the buffer, hands the copy on, then clears it, so chunks written meanwhile were
    cleared unsent (97 % of them here, with a slow hand-on, before ``guard_data_streams``). Beam's own class,
    with a hand-on slow enough that every write but the first falls into a flush."""
    from apache_beam.runners.worker.data_plane import TimeBasedBufferingClosableOutputStream

    direct.guard_data_streams()
    direct.guard_data_streams()  # idempotent: one lock, not two nested
    sent = []

    def hand_on(data):
        sent.append(len(data))
        time.sleep(0.03)

    stream = TimeBasedBufferingClosableOutputStream(lambda data: sent.append(len(data)),
                                                    flush_callback=hand_on, time_flush_threshold_ms=5)
    for _ in range(100):
        stream.write(b"x" * 10_000)
        time.sleep(0.001)
    stream.close()
    assert sum(sent) == 100 * 10_000 and len(sent) > 2, sent


def test_a_local_crawl_runs_with_the_data_streams_guarded_and_their_buffers_at_256_kib():
    """The command's streams (time-based) and a worker's (size-based) send what they hold from 256 KiB on, not 10 MB:
    on a large tree each of discovery's outputs filled its buffer (docs/scaling.md)."""
    from apache_beam.runners.worker.data_plane import (
        SizeBasedBufferingClosableOutputStream,
        TimeBasedBufferingClosableOutputStream,
    )

    direct.runner(PipelineOptions(direct.arguments([])))
    direct.smaller_data_buffers()  # as each worker calls it: once more changes nothing
    assert TimeBasedBufferingClosableOutputStream._beamtrawl_guarded
    sent = []
    stream = SizeBasedBufferingClosableOutputStream(flush_callback=lambda data: sent.append(len(data)))
    for _ in range(3):
        stream.write(b"x" * 150_000)
        stream.maybe_flush()
    assert sent == [300_000]
    stream = TimeBasedBufferingClosableOutputStream(flush_callback=sent.append, time_flush_threshold_ms=60_000)
    assert stream._size_flush_threshold == direct.DATA_BUFFER_BYTES == 256 << 10
    stream.close()


def test_dofn_specs_are_remembered_as_beam_gives_them():
    """Per class where an instance's own attributes cannot change the answer; per instance where they can (a
    ``beam.Map`` wrapper, a DoFn holding a bound method of a stateful DoFn)."""
    from apache_beam.transforms import userstate
    from beamtrawl.runners.dofn_specs import remember_dofn_specs
    from beamtrawl.transforms.preparators import BUILTIN
    from beamtrawl.transforms.prepare import PrepareOptions, _Prepare

    bag_state = beam.DoFn.StateParam(userstate.BagStateSpec("bag", beam.coders.VarIntCoder()))

    class Stateful(beam.DoFn):
        def process(self, element, bag=bag_state):
            yield element

    class Plain(beam.DoFn):
        def process(self, element):
            yield element

    class Slotted(beam.DoFn):
        __slots__ = ("other",)

    holder, slotted = Plain(), Slotted()
    holder.other = slotted.other = Stateful().process
    direct.runner(PipelineOptions(direct.arguments([])))
    remember_dofn_specs()  # idempotent: the function is replaced once
    remembered = userstate.get_dofn_specs
    beams = remembered.__wrapped__
    assert not getattr(beams, "_beamtrawl_remembered", False)
    stateful = beam.Map(lambda kv, bag=bag_state: kv).fn
    for dofn in (Stateful(), Stateful(), Plain(), holder, holder, Plain(), slotted, beam.Map(len).fn, stateful,
                 stateful,
                 _Prepare(PrepareOptions(BUILTIN, "fp", 2**20, 250_000))):
        assert remembered(dofn) == beams(dofn), dofn
    assert remembered(holder)[0] and not remembered(Plain())[0]
    assert userstate.is_stateful_dofn(holder) and not userstate.is_stateful_dofn(Plain())


def test_schemad_named_tuples_are_unpickled_with_one_class_per_schema():
    """runners/row_types.py: Beam's unpickling of a named tuple it made from a schema no longer makes a class per
    element; the values are Beam's."""
    import pickle

    from apache_beam.typehints import schemas
    from beamtrawl.runners.beam_import import import_beam
    from beamtrawl.transforms.records import Listing

    import_beam()
    schema = schemas.named_tuple_to_schema(Listing)
    schema.id = "unseen_in_this_process"
    made = schemas.named_tuple_from_schema(schema)  # as a worker makes it from the coder's schema
    assert made is not Listing
    rows = [pickle.loads(pickle.dumps(made(f"file:///d{n}/", "l", True, 3, ["c"]))) for n in range(3)]
    assert len({type(row) for row in rows}) == 1 and tuple(rows[2]) == ("file:///d2/", "l", True, 3, ["c"])
    assert type(rows[0])._fields == Listing._fields


def test_the_join_loss_benchmark_runs_in_its_tiny_mode():
    import subprocess
    import sys

    bench = Path(__file__).resolve().parent.parent / "bench" / "beam_join_loss.py"
    done = subprocess.run([sys.executable, str(bench), "--tiny"], capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0 and "guarded 0 keys lost" in done.stdout, done.stdout + done.stderr[-2000:]
