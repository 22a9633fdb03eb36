"""The crawl configuration: one YAML file, one schema, every default written once, checked before anything
runs. An error names the file, the key path and the problem in one line, e.g.
``crawl.yaml: whitelist[2].regex: unbalanced parenthesis at position 7``; unknown keys are errors.

- :mod:`.schema` — the sections and their keys (pydantic models; :mod:`.preparators`, :mod:`.plugins`,
  :mod:`.access` and :mod:`.auxfields` hold the sections that build on a registry or a controller);
- :mod:`beamtrawl.transforms.fields` — the value types a file is written in, each with its check and message
  (in transforms, since sources and index targets write their own sections' models with them);
- the sources' sections (``http``, ``smb``, …) and the ``index`` section of each kind are the models the sources
  and index targets declare (``Settings``), assembled here from the registries;
- :mod:`.model` — :class:`Config`, what the crawl reads, built from a checked file;
- :mod:`.loader` — YAML, ``--set`` overrides and the one-line errors;
- :mod:`.reference` — docs/configuration-reference.md, generated from the schema.
"""

from beamtrawl.pipeline.config.loader import MAX_MESSAGE, ConfigError, load_config, parse_config
from beamtrawl.pipeline.config.model import DEFAULTS, Config
from beamtrawl.transforms.values import Credential, StartUrl, UrlPattern, credential_for

__all__ = ["DEFAULTS", "MAX_MESSAGE", "Config", "ConfigError", "Credential", "StartUrl", "UrlPattern", "credential_for", "load_config",
           "parse_config"]
