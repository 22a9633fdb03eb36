"""A third-party preparator: ``.shout`` files, their text in capitals after ``prefix``."""

import re

from transforms.preparators import PreparatorSpec, Prepared


def prepare_shout(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    text = data.decode("utf-8")
    return Prepared(title=f"{params['prefix']}{text.split()[0].upper()}", content=text.upper())


PREPARATOR = PreparatorSpec("shout", prepare_shout, priority=20, url_pattern=re.compile(r"\.shout$"),
                            params=(("prefix", "Shouted: "),))
