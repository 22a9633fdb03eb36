"""Any import of this top-level package is a beamtrawl bug: beamtrawl installs as beamtrawl.plugins."""
raise ImportError("the squatter's top-level plugins was imported")
