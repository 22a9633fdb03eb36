"""Crawler plugins: regain's hooks as pluggy hook specifications (:mod:`plugins.hookspecs`), the
plugin loader and caller (:mod:`plugins.manager`), the ``plugins:`` configuration
(:mod:`plugins.config`), and the plugins that ship with beamtrawl (:mod:`plugins.filesize`,
:mod:`plugins.link_text_title`)."""

from beamtrawl.plugins.hookspecs import hookimpl

__all__ = ["hookimpl"]
