"""quill:// (and, it claims, http:// and ink://): a source with nothing in it, for tests/test_sources.py."""


class Quill:
    schemes = ("quill", "ink", "http")

    def __init__(self, settings):
        self.settings = settings

    def expand(self, item, rules, follow_symlinks, budget):
        return iter(())

    def open_document(self, url):
        raise OSError("a quill holds no documents")
