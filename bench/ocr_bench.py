"""OCR benchmark (issue 25): how much of a page's words OCR recovers, how fast it runs against the
``tesseract`` command on the same page images, and what deciding not to OCR costs a text PDF.

Run from the repository root (after ``python -m tests.package_files``, which fetches the Debian packages)::

    PYTHONPATH=$PWD python bench/ocr_bench.py [--pages 24] [--rounds 3] [--tiny]

The pages are real: PDFs with a text layer that Debian documentation packages ship (the Bash reference
manual and man page of bash-doc, the shared-mime-info specification), a spread of pages from each.

- **accuracy**: each page rendered by PDFium at 300 dpi and OCR'd through beamtrawl's image preparator; its
  word recall is the share of the text layer's words (lower-cased, letters and digits) that the OCR text
  holds, counted with multiplicity. Median over the pages, clean (target ≥ 0.95) and degraded as a poor scan
  is: rotated 1.5°, grain added, 200 dpi, saved as JPEG at quality 60 (target ≥ 0.85). Then the pictures of
  text that public packages ship, with their text transcribed (bench/ocr_scans.py: a real scanned page of
  loan terms, and Tika's OCR test images), each through its own preparator: their word recall.
- **speed**: the clean page images (PNG files) OCR'd by the image preparator, one process and then two,
  against the ``tesseract FILE -`` command run on the same files one after another, in the same run (with
  one thread, OMP_THREAD_LIMIT=1, as beamtrawl runs it; the command's default of several threads is shown
  too). Targets: one worker ≥ 0.9× the command, two workers ≥ 1.7×.
- **not OCR'd**: the text PDFs prepared whole by the PDF preparator with OCR on and off (it never renders a
  page with a text layer): the ratio is the time spent deciding (target ≤ 1.02). And whole crawls of a
  real text-only tree (Python's library reference as Debian's python3.X-doc ships it, 317 HTML pages):
  ``beamtrawl crawl`` into a fresh index with ``ocr`` enabled and with ``ocr: {enabled: false}``, the two
  alternating (off, on, then on, off, …) for ``--rounds`` rounds in the same run, timed as whole process
  trees (wall seconds, and CPU seconds, which depend less on what else the machine runs): the median of the
  rounds' on/off ratios (target ≤ 1.02).

``--tiny`` runs two pages and one round of crawls of 12 pages, for the test suite (tests/test_ocr.py); its
figures mean nothing.
Exit code 0 when measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.package_files import debian_file, python_library_docs

sys.path.insert(0, str(ROOT / "bench"))
from crawl_bench import run_measured  # the bench folder is no package

PDFS = (("bash-doc", "usr/share/doc/bash/bashref.pdf"), ("bash-doc", "usr/share/doc/bash/bash.pdf"),
        ("shared-mime-info", "usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"))
DPI, POOR_DPI = 300, 200
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> Counter:
    return Counter(word.lower() for word in _WORD.findall(text) if len(word) > 1 or word.isdigit())


def recall(layer: str, recognised: str) -> float:
    """The share of the text layer's words (with multiplicity) that the recognised text holds."""
    expected, found = words(layer), words(recognised)
    total = sum(expected.values())
    return sum(min(n, found[word]) for word, n in expected.items()) / total if total else 1.0


def pages(count: int) -> list[tuple[str, object, str]]:
    """(label, page image at 300 dpi, its text layer), spread evenly through each PDF."""
    import pypdfium2

    chosen, per_pdf = [], max(1, -(-count // len(PDFS)))
    for package, path in PDFS:
        document = pypdfium2.PdfDocument(str(debian_file(package, path)))
        numbers = [round(i * (len(document) - 1) / max(1, per_pdf)) + 1 for i in range(per_pdf)]
        for number in numbers:
            page = document[min(number, len(document) - 1)]
            layer = page.get_textpage().get_text_range()
            if len(words(layer)) < 20:  # a blank or title page says little about accuracy
                continue
            image = page.render(scale=DPI / 72, grayscale=True).to_pil()
            chosen.append((f"{Path(path).name} p.{number + 1}", image, layer))
        document.close()
    return chosen[:count]


def degraded(image) -> bytes:
    """The page as a poor scan: 200 dpi, rotated 1.5°, grain, JPEG at quality 60."""
    import random

    from PIL import Image, ImageFilter

    low = image.resize((image.width * POOR_DPI // DPI, image.height * POOR_DPI // DPI), Image.LANCZOS)
    turned = low.rotate(1.5, resample=Image.BICUBIC, expand=True, fillcolor=255)
    rng = random.Random(25)
    grain = Image.frombytes("L", turned.size, bytes(rng.randrange(0, 48) for _ in range(turned.width * turned.height)))
    noisy = Image.blend(turned, grain.filter(ImageFilter.GaussianBlur(0.6)), 0.12)
    out = io.BytesIO()
    noisy.save(out, "JPEG", quality=60)
    return out.getvalue()


def prepare(path: str) -> str:
    """OCR one image file through beamtrawl's image preparator (the work a crawl's preparing process does)."""
    from beamtrawl.transforms.preparators.image import prepare_image

    data = Path(path).read_bytes()
    return prepare_image(data, f"file://{path}", "image/png", {}).content


def command(path: str, threads: str | None) -> str:
    env = dict(os.environ)
    env.pop("OMP_THREAD_LIMIT", None)
    if threads:
        env["OMP_THREAD_LIMIT"] = threads
    return subprocess.run(["tesseract", path, "-"], capture_output=True, text=True, check=True, env=env).stdout


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the commands)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(function, items, cpu: list[float] | None = None) -> float:
    """Wall seconds of ``function`` over ``items``; their CPU seconds appended to ``cpu`` when given."""
    started, spent = time.perf_counter(), _cpu()
    for item in items:
        function(item)
    if cpu is not None:
        cpu.append(_cpu() - spent)
    return time.perf_counter() - started


def pooled(workers: int, files: list[str]) -> float:
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(prepare, files[:workers]))  # start-up and imports are not OCR
        started = time.perf_counter()
        list(pool.map(prepare, files))
        return time.perf_counter() - started


def commands_at_once(workers: int, files: list[str]) -> float:
    """Seconds for the ``tesseract`` command (one thread each) on ``files``, ``workers`` of them at a time:
    the peer's figure with two workers, what the machine gives two processes in this run."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        started = time.perf_counter()
        list(pool.map(lambda path: command(path, "1"), files))
        return time.perf_counter() - started


def speed(files: list[str], rounds: int, two: bool) -> None:
    """Pages per second of the command and of beamtrawl, one and two at a time, measured in turn for
    ``rounds`` rounds (a load that changes during the run weighs on all alike); ratios are the medians of
    the rounds' ratios."""
    ours, theirs = prepare(files[0]), command(files[0], "1")
    # the same pixels, language and output format; tesserocr's wheel carries a newer tesseract than Debian's
    # command, whose text may differ in a word or two: the same work, not byte for byte the same answer
    if recall(theirs, ours) < 0.98:
        raise SystemExit(f"check failed: the preparator read {len(ours.split())} words where the command read "
                         f"{len(theirs.split())} on the same page (recall {recall(theirs, ours):.3f})")
    seconds: dict[str, list[float]] = {"command": [], "beamtrawl x1": [], "command x2": [], "beamtrawl x2": []}
    default_threads = timed(lambda path: command(path, None), files)
    cpu: dict[str, list[float]] = {"command": [], "beamtrawl x1": []}
    for _ in range(rounds):
        seconds["command"].append(timed(lambda path: command(path, "1"), files, cpu["command"]))
        seconds["beamtrawl x1"].append(timed(prepare, files, cpu["beamtrawl x1"]))
        if two:
            seconds["command x2"].append(commands_at_once(2, files))
            seconds["beamtrawl x2"].append(pooled(2, files))

    def ratio(name: str, over: str = "command") -> float:
        return statistics.median(b / a for a, b in zip(seconds[name], seconds[over], strict=True))

    rate = {name: len(files) / statistics.median(values) for name, values in seconds.items() if values}
    print(f"speed ({rounds} rounds, {os.cpu_count()} cores, OMP_THREAD_LIMIT=1 for the command and beamtrawl; the "
          f"machine may be shared, so the ratios are the figures): tesseract command {rate['command']:.3f} pages/s "
          f"({len(files) / default_threads:.3f} with its default threads)")
    print(f"  beamtrawl x1 {rate['beamtrawl x1']:.3f} pages/s = {ratio('beamtrawl x1'):.2f}x the command "
          f"(target >= 0.9); per CPU-second {statistics.median(cpu['command']) / statistics.median(cpu['beamtrawl x1']):.2f}x "
          f"the command's pages (what a loaded machine changes least)")
    if two:
        print(f"  beamtrawl x2 {rate['beamtrawl x2']:.3f} pages/s = {ratio('beamtrawl x2'):.2f}x the command "
              f"(target >= 1.7); two commands at once {rate['command x2']:.3f} pages/s = {ratio('command x2'):.2f}x "
              f"the command (what the machine gives two processes); beamtrawl x2 / two commands "
              f"{ratio('beamtrawl x2', 'command x2'):.2f}x")


def text_pdfs_ratio(repeat: int) -> float:
    """Time of the text PDFs through the PDF preparator with OCR on over OCR off."""
    from beamtrawl.transforms.preparators.pdf import prepare_pdf
    from beamtrawl.transforms.values import OcrSettings

    data = [debian_file(package, path).read_bytes() for package, path in PDFS]
    on, off = {"ocr": OcrSettings()}, {"ocr": OcrSettings(enabled=False)}
    best = {"on": float("inf"), "off": float("inf")}
    for _ in range(repeat):
        for name, params in (("off", off), ("on", on)):
            started = time.perf_counter()
            for pdf in data:
                prepared = prepare_pdf(pdf, "file:///doc.pdf", "application/pdf", params)
                if "ocr_pages" in prepared.fields:
                    raise SystemExit(f"check failed: a text PDF had {prepared.fields['ocr_pages']} pages OCR'd")
            best[name] = min(best[name], time.perf_counter() - started)
    return best["on"] / best["off"]


def _crawl_once(work: Path, tree: Path, enabled: bool, workers: int) -> dict:
    """One ``beamtrawl crawl`` of ``tree`` into a fresh index, OCR enabled or not: its run_measured figures."""
    import json
    import shutil

    name = "on" if enabled else "off"
    shutil.rmtree(work / f"{name}.work", ignore_errors=True)
    for suffix in (".sqlite", ".sqlite-wal", ".sqlite-shm"):
        (work / f"{name}{suffix}").unlink(missing_ok=True)
    config = work / f"{name}.yaml"
    ocr = "" if enabled else "ocr: {enabled: false}\n"
    config.write_text(f"start:\n  - {{url: {json.dumps(str(tree))}}}\nindex: {{path: {name}.sqlite}}\n{ocr}")
    program = (shutil.which("beamtrawl") or shutil.which("beamtrawl", path=os.path.dirname(sys.executable))
               or sys.exit("the beamtrawl command is not on PATH (pip install -e .)"))
    run = run_measured([program, "crawl", str(config), f"--direct_num_workers={workers}"], work / f"{name}.log")
    report = json.loads((work / f"{name}.report.json").read_text())
    counts = report.get("counts", {})
    if counts.get("ocr_pages"):
        sys.exit(f"check failed: the crawl of a text-only tree OCR'd {counts['ocr_pages']} pages")
    return run


def text_tree_crawls(rounds: int, tiny: bool) -> tuple[float, float]:
    """(wall, CPU) medians of the rounds' on/off ratios of crawls of Python's library reference. In each
    round the two crawls run at the same time, one worker each (two cores between them): on a machine shared
    with other work, whose load changes from one minute to the next, crawls one after the other differed by
    ±50 % in wall time whatever their settings; side by side, they meet the same load."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    work = Path(tempfile.mkdtemp(prefix="ocr-crawl-"))
    tree = _text_tree(work, tiny)
    try:
        files = sum(1 for path in tree.rglob("*") if path.is_file())
        print(f"crawls of {files} HTML pages of Python's library reference, OCR on and off side by side "
              f"(one worker each), {rounds} rounds")
        walls, cpus = [], []
        for number in range(rounds):
            with ThreadPoolExecutor(2) as pool:
                runs = dict(zip((True, False), pool.map(lambda on: _crawl_once(work, tree, on, 1), (True, False)),
                                strict=True))
            walls.append(runs[True]["seconds"] / runs[False]["seconds"])
            cpus.append(runs[True]["cpu"] / runs[False]["cpu"])
            print(f"  round {number + 1}: off {runs[False]['seconds']:.1f} s wall, {runs[False]['cpu']:.1f} s CPU; "
                  f"on {runs[True]['seconds']:.1f} s wall, {runs[True]['cpu']:.1f} s CPU")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return statistics.median(walls), statistics.median(cpus)


def _text_tree(work: Path, tiny: bool) -> Path:
    """Python's library reference as Debian ships it, or (tiny) a copy of 12 of its pages."""
    import shutil

    library = python_library_docs()
    if not tiny:
        return library
    tree = work / "library"
    tree.mkdir()
    for page in sorted(library.glob("*.html"))[:12]:
        shutil.copy(page, tree)
    return tree


def text_tree_preparation(rounds: int, tiny: bool) -> float:
    """The preparation step of those crawls alone, in this process and without Beam: every page of the tree
    through the configured preparators with OCR on and with it off, alternating; best of ``rounds`` each,
    on/off."""
    from beamtrawl.pipeline.config.ocr import with_ocr
    from beamtrawl.transforms.preparators import BUILTIN, Chain
    from beamtrawl.transforms.preparators.mime import MimeSniffer
    from beamtrawl.transforms.values import OcrSettings

    pages = sorted(python_library_docs().glob("*.html"))[:12 if tiny else None]
    data = [(page.read_bytes(), page.as_uri()) for page in pages]
    sniff = MimeSniffer()
    chains = {on: Chain(with_ocr(BUILTIN, OcrSettings(enabled=on)), sniff) for on in (True, False)}
    best = {True: float("inf"), False: float("inf")}
    for number in range(rounds):
        for on in ((False, True) if number % 2 == 0 else (True, False)):
            started = time.perf_counter()
            for body, url in data:
                chains[on].run(body, url, sniff(body, url))
            best[on] = min(best[on], time.perf_counter() - started)
    print(f"  preparing its {len(data)} pages in one process: off {best[False]:.2f} s, on {best[True]:.2f} s (best of "
          f"{rounds})")
    return best[True] / best[False]


def scans_recall(tiny: bool) -> None:
    """Word recall on the pictures of text public packages ship (bench/ocr_scans.py), each read by its own
    preparator (image or PDF) as a crawl reads it."""
    from beamtrawl.transforms.preparators.image import prepare_image
    from beamtrawl.transforms.preparators.pdf import prepare_pdf
    from beamtrawl.transforms.values import OcrSettings
    from ocr_scans import REAL_SCANS, SCANS

    from tests.package_files import tika_test_document

    params = {"ocr": OcrSettings(dpi=DPI)}
    found = {}
    for scan in (scan for scan in SCANS if scan.small or not tiny):
        prepare = prepare_pdf if scan.mimetype == "application/pdf" else prepare_image
        data = tika_test_document(scan.module, scan.name)
        found[scan.name] = recall(scan.text, prepare(data, f"file:///{scan.name}", scan.mimetype, params).content)
        kind = "scanned from paper" if scan.name in REAL_SCANS else "made for OCR tests"
        print(f"  {scan.name:38} recall {found[scan.name]:.3f}  ({sum(words(scan.text).values())} words, {kind})")
    real = [found[name] for name in REAL_SCANS if name in found]
    print(f"pictures of text from public packages (Tika's test documents): median word recall "
          f"{statistics.median(found.values()):.3f} over {len(found)}"
          + (f"; the real scan {statistics.median(real):.3f}" if real else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=24, help="pages measured (spread over the three PDFs)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of crawls with OCR off and on")
    parser.add_argument("--speed-rounds", type=int, default=2, help="rounds of the speed measurements")
    parser.add_argument("--tiny", action="store_true", help="two pages, for the test suite")
    parser.add_argument("--speed-only", action="store_true", help="only the speed against the command")
    args = parser.parse_args()
    count = 2 if args.tiny else args.pages
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its font warnings are no figure
    os.environ["OMP_THREAD_LIMIT"] = "1"  # as the preparator sets it; the command's default is measured apart
    chosen = pages(count)
    print(f"{len(chosen)} pages of {', '.join(Path(p).name for _, p in PDFS)} at {DPI} dpi")
    with tempfile.TemporaryDirectory(prefix="ocr-bench-") as folder:
        files, poor = [], []
        for n, (_, image, _) in enumerate(chosen):
            files.append(os.path.join(folder, f"page{n}.png"))
            image.save(files[-1])
            poor.append(os.path.join(folder, f"poor{n}.jpg"))
            Path(poor[-1]).write_bytes(degraded(image))

        if args.speed_only:
            speed(files, args.speed_rounds, two=True)
            return 0
        clean = [recall(layer, prepare(path)) for (_, _, layer), path in zip(chosen, files, strict=True)]
        rough = [recall(layer, prepare(path)) for (_, _, layer), path in zip(chosen, poor, strict=True)]
        for (label, _, _), a, b in zip(chosen, clean, rough, strict=True):
            print(f"  {label:38} recall clean {a:.3f}  degraded {b:.3f}")
        print(f"accuracy: median word recall clean {statistics.median(clean):.3f} (target >= 0.95), "
              f"degraded {statistics.median(rough):.3f} (target >= 0.85)")
        scans_recall(args.tiny)

        speed(files, 1 if args.tiny else args.speed_rounds, two=not args.tiny)
    ratio = text_pdfs_ratio(1 if args.tiny else 5)
    print(f"not OCR'd: text PDFs prepared with OCR on / off = {ratio:.3f} (target <= 1.02)")
    wall, cpu = text_tree_crawls(1 if args.tiny else args.rounds, args.tiny)
    print(f"not OCR'd: crawl of a text-only tree with OCR on / off = {wall:.3f} wall, {cpu:.3f} CPU "
          f"(medians of the rounds' ratios; target <= 1.02)")
    prepared = text_tree_preparation(1 if args.tiny else 3, args.tiny)
    print(f"not OCR'd: preparing the text-only tree with OCR on / off = {prepared:.3f} (target <= 1.02)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
