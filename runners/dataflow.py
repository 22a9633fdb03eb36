"""Google Cloud Dataflow. Needs ``apache-beam[gcp]`` installed where the job is launched, a project, a
region and a ``gs://`` temp location; the code reaches the workers as a package built from this project's
``setup.py`` (``--setup_file``, set here unless given). The index must be OpenSearch, reachable from the
workers; file start URLs only work on a file system every worker mounts."""

from __future__ import annotations

import os
import re

from beamtrawl.runners.options import RunnerError, option, with_defaults

SETUP_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.py")


def arguments(beam_args: list[str]) -> list[str]:
    project, region, temp = (option(beam_args, name) for name in ("project", "region", "temp_location"))
    missing = [name for name, value in (("project", project), ("region", region), ("temp_location", temp))
               if not value]
    if missing:
        raise RunnerError(f"dataflow: give --{', --'.join(missing)}")
    if not re.fullmatch(r"[a-z][a-z0-9-]{4,28}[a-z0-9]|[a-z0-9.-]+:[a-z][a-z0-9-]{4,28}[a-z0-9]", project):
        raise RunnerError(f"dataflow: --project {project} is not a Google Cloud project id")
    if not re.fullmatch(r"[a-z]+-[a-z]+\d+", region):
        raise RunnerError(f"dataflow: --region {region} is not a region such as europe-west1")
    if not temp.startswith("gs://"):
        raise RunnerError(f"dataflow: --temp_location must be a gs:// path, got {temp}")
    return with_defaults(beam_args, runner="DataflowRunner", setup_file=SETUP_FILE)
