"""Any import of this top-level package is a beamtrawl bug: beamtrawl installs as beamtrawl.pipeline."""
raise ImportError("the squatter's top-level pipeline was imported")
