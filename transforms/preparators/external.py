"""An external program as a preparator (regain's ExternalPreparator): the document is written to a
temporary file, ``${filename}`` in the configured command (regain's placeholder, which the configuration
leaves alone while it expands other ``${NAME}``) is replaced by its path, and the program's standard output is the content. It runs in an empty temporary folder of its own.

The command is split like a shell would (``shlex``) but runs without a shell, so a file name can never
inject a command. It runs in its own process group, which is killed as a whole when ``timeout`` passes
(a converter that starts helpers cannot leave them behind). With ``check_exit_code`` (the default, as in
regain) a non-zero exit is a failure, and the next preparator is tried.
"""

from __future__ import annotations

import os
import selectors
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.text import decode_text
from beamtrawl.transforms.urls import extension

PLACEHOLDER = "${filename}"
DEFAULTS = (("command", ""), ("timeout", 60.0), ("check_exit_code", True), ("max_output_bytes", 64 * 1024**2))
MAX_ERROR_BYTES = 64 * 1024  # of a program's standard error kept (its first line names a failure)


def check_params(params: dict) -> dict:
    """Refuse what cannot run: an empty command, unbalanced quotes, a program not on PATH."""
    command = params["command"]
    if not command.strip():
        raise ValueError("command: is required, e.g. 'ps2ascii ${filename}' in the configuration")
    try:
        argv = shlex.split(command)
    except ValueError as err:
        raise ValueError(f"command: {err}") from None
    if PLACEHOLDER not in command:
        raise ValueError(f"command: must contain {PLACEHOLDER}, where the "
                         "document's path goes")
    if shutil.which(argv[0]) is None:
        raise ValueError(f"command: program {argv[0]!r} not found on PATH")
    if params["timeout"] <= 0:
        raise ValueError("timeout: must be a positive number of seconds")
    return params


def run_program(data: bytes, url: str, params: dict) -> str:
    """The standard output of ``params["command"]`` run on ``data``, written to a file named like ``url``'s
    in an empty temporary folder, which is also the program's working folder: a relative path in the
    document (roff's ``.so man1/x.1``) finds nothing. ``params`` as :data:`DEFAULTS` has them (timeout,
    check_exit_code, max_output_bytes)."""
    command = params["command"]
    suffix = "." + extension(url) if extension(url) else ""
    with tempfile.TemporaryDirectory(prefix="beamtrawl-") as folder:
        path = os.path.join(folder, "document" + suffix)
        with open(path, "wb") as handle:
            handle.write(data)
        argv = [arg.replace(PLACEHOLDER, path) for arg in shlex.split(command)]
        return run_in(argv, folder, params)


def run_in(argv: list[str], folder: str, params: dict) -> str:
    """The standard output of ``argv`` run in ``folder`` in a process group of its own, killed as a whole
    after ``params["timeout"]`` seconds; with ``check_exit_code`` a non-zero exit is a failure naming the
    first line of its standard error. For preparators that run several commands on one file."""
    timeout = params["timeout"]
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True, cwd=folder)
    except OSError as err:
        raise PreparationError(f"cannot run {argv[0]}: {err.strerror or err}") from None
    try:
        out, err = _bounded_output(process, timeout, params["max_output_bytes"])
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise PreparationError(f"{argv[0]} timed out after {timeout:g} s") from None
    finally:
        process.stdout.close()
        process.stderr.close()
    if params["check_exit_code"] and process.returncode != 0:
        first = next((line for line in decode_text(err).splitlines() if line.strip()), "")
        detail = f": {first}"[:200] if first else ""
        raise PreparationError(f"{argv[0]} exited with {process.returncode}{detail}")
    return decode_text(out)


def _bounded_output(process: subprocess.Popen, timeout: float, limit: int) -> tuple[bytes, bytes]:
    """The first ``limit`` bytes of the program's standard output and :data:`MAX_ERROR_BYTES` of its standard
    error, read until it exits; what comes past them is read and dropped. ``communicate`` kept all of both:
    mdb-tables on a truncated database writes warnings at 10 MB/s until its time is up. Raises TimeoutExpired."""
    deadline = time.monotonic() + timeout
    kept = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
    room = {process.stdout.fileno(): limit, process.stderr.fileno(): MAX_ERROR_BYTES}
    with selectors.DefaultSelector() as selector:
        for fd in kept:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(process.args, timeout)
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 1024**2)
                if not chunk:
                    selector.unregister(key.fd)
                kept[key.fd] += chunk[:max(0, room[key.fd] - len(kept[key.fd]))]
    process.wait(max(0.0, deadline - time.monotonic()))
    return bytes(kept[process.stdout.fileno()]), bytes(kept[process.stderr.fileno()])


def prepare_external(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    return Prepared(content=run_program(data, url, params).strip())
