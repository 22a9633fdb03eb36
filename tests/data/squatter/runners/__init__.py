"""Any import of this top-level package is a beamtrawl bug: beamtrawl installs as beamtrawl.runners."""
raise ImportError("the squatter's top-level runners was imported")
