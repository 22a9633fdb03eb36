"""Beam alone, no beamtrawl code in the graph: does FnApiRunner lose elements on their way into a CoGroupByKey?

Issue 33's reproduction, minimal (docs/upstream-beam-lost-chunks.md). Two PCollections of ``--records`` keyed
records (file URLs, about 150 bytes each), each made by a FlatMap after a Reshuffle so that both run as
parallel bundles on the two worker processes, are joined by ``CoGroupByKey``; every key must come out with one
record of each side. Each round runs once unguarded (Beam as it is) and once with
``beamtrawl.runners.direct.guard_data_streams`` (the fix) in the same run, and prints the keys that lost a
side::

    python bench/beam_join_loss.py [--records 1000000] [--rounds 3]
    python bench/beam_join_loss.py --tiny       # 20,000 records, 1 round: that it runs (it loses nothing so small)

Seen on the 2-core machine under load (a load average of 20): unguarded, 2 of 4 rounds of a million lost
136,194 and 319,028 keys' records; guarded, none. Exit code 1 when a guarded round lost anything.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

SEEDS = 1000


def _records(seed: int, side: str, records: int):
    for i in range(seed, records, SEEDS):
        yield (f"file:///tree/t{i // 100000}/m{i // 1000 % 100:02d}/l{i // 100 % 10}/f{i % 100:02d}.txt",
               (side, i, "x" * 100))


def run_once(records: int, guarded: bool) -> int:
    """One pipeline; prints how many keys got exactly one record of each side."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    if guarded:
        from beamtrawl.runners.direct import guard_data_streams

        guard_data_streams()
    options = PipelineOptions(direct_num_workers=2, direct_running_mode="multi_processing")
    with beam.Pipeline(runner=FnApiRunner(), options=options) as p:
        sides = {side: (p | f"Seeds{side}" >> beam.Create(range(SEEDS)) | f"Spread{side}" >> beam.Reshuffle()
                        | f"Records{side}" >> beam.FlatMap(_records, side, records)) for side in "ab"}
        _ = (sides | beam.CoGroupByKey()
             | beam.Map(lambda kv: int(len(kv[1]["a"]) == 1 and len(kv[1]["b"]) == 1))
             | beam.CombineGlobally(sum)
             | beam.Map(lambda n: print(f"JOINED {n}", flush=True)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--one", choices=("guarded", "unguarded"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a fresh process per run: the guard, once applied, stays for the process
        return run_once(args.records, args.one == "guarded")
    if args.tiny:
        args.records, args.rounds = 20_000, 1
    print(f"{args.records:,} records per side, CoGroupByKey on FnApiRunner with 2 worker processes")
    lost_guarded = 0
    for n in range(1, args.rounds + 1):
        line = []
        for mode in ("unguarded", "guarded"):
            done = subprocess.run([sys.executable, __file__, "--records", str(args.records), "--one", mode],
                                  capture_output=True, text=True, check=False)
            joined = [int(word.split()[1]) for word in done.stdout.splitlines() if word.startswith("JOINED ")]
            lost = args.records - joined[0] if joined and not done.returncode else -1
            if mode == "guarded":
                lost_guarded += abs(lost)
            line.append(f"{mode} {'failed: ' + done.stderr.strip().splitlines()[-1] if lost < 0 else f'{lost:,} keys lost'}")
        print(f"round {n}: " + "; ".join(line), flush=True)
    print("PASS: the guarded runner lost nothing" if not lost_guarded else "FAIL: the guarded runner lost keys")
    return 1 if lost_guarded else 0


if __name__ == "__main__":
    sys.exit(main())
