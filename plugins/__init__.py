"""Crawler plugins: regain's hooks as pluggy hook specifications, the plugin manager, and the
plugins that ship with beamtrawl (built in the plugins issue)."""
