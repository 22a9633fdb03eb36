"""Any import of this top-level package is a beamtrawl bug: beamtrawl installs as beamtrawl.transforms."""
raise ImportError("the squatter's top-level transforms was imported")
