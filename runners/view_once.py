"""Pipeline options whose views are made once.

Beam's ``Pipeline.apply`` asks the options for a ``TypeOptions`` view twice for every transform, and each
``view_as`` builds an argument parser of every registered option and parses the flags again: a third of the
time a crawl's graph took to build (py-spy, issue 27). A view shares the options' values (``_all_options``),
so one view per class is the same view every time.
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions


class ViewOnceOptions(PipelineOptions):
    """:class:`PipelineOptions` that make each view once and hand it out again."""

    def view_as(self, cls):
        views = self.__dict__.setdefault("_views", {})  # not through __setattr__: it takes options only
        if cls not in views:
            views[cls] = super().view_as(cls)
        return views[cls]
