"""A third-party preparator: ``.shout`` files, their text in capitals after ``prefix``."""

import re

from beamtrawl.transforms.preparators import PreparatorSpec, Prepared


def prepare_shout(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    text = data.decode("utf-8")
    return Prepared(title=f"{params['prefix']}{text.split()[0].upper()}", content=text.upper())


PREPARATOR = PreparatorSpec("shout", prepare_shout, priority=20, url_pattern=re.compile(r"\.shout$"),
                            params=(("prefix", "Shouted: "),))


def prepare_forever(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    """A parser that never returns, as a broken library might: the crawl must kill it and go on."""
    import time

    while True:
        time.sleep(3600)


HANG = PreparatorSpec("hang", prepare_forever, priority=20, url_pattern=re.compile(r"\.hang$"))
