"""ink://: a source with nothing in it, for tests/test_sources.py."""


class Ink:
    schemes = ("ink",)

    def __init__(self, settings):
        self.settings = settings

    def expand(self, item, rules, follow_symlinks, budget):
        return iter(())

    def open_document(self, url):
        raise OSError("an ink holds no documents")
