"""Crawler plugins: regain's hooks as pluggy hook specifications (:mod:`plugins.hookspecs`), the
plugin loader and caller (:mod:`plugins.manager`), and the plugins that ship with beamtrawl
(:mod:`plugins.filesize`, :mod:`plugins.link_text_title`). The ``plugins:`` section of the configuration
is checked by :mod:`pipeline.config.plugins`."""

from beamtrawl.plugins.hookspecs import hookimpl

__all__ = ["hookimpl"]
