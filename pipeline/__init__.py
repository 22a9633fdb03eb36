"""The command line, the configuration, the graph of one crawl and its report."""

__version__ = "0.1.0"
