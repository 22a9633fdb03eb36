"""Office files encrypted with Excel's default password. Excel encrypts a workbook whose sheets or structure
are protected, without a password to open, with the password "VelvetSweatshop"; Excel, LibreOffice and
Tika open such a file without asking, so its text is as public as any other. msoffcrypto-tool decrypts it
(an OOXML file's ``EncryptedPackage``, an XLS's RC4 or XOR-obfuscated Workbook stream); the decrypted file
is then prepared by its own type (:func:`chain.prepare_part`, so the nesting bound holds). A file encrypted
with a password of its own stays unreadable (:data:`NOT_DEFAULT`).
"""

from __future__ import annotations

import io

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_part

MIME_TYPES = ("application/encrypted",)  # libmagic's name for an OLE2 file with an EncryptedPackage
DEFAULT_PASSWORD = "VelvetSweatshop"
NOT_DEFAULT = "encrypted with a password other than Excel's default"


def decrypt(data: bytes, password: str = DEFAULT_PASSWORD) -> bytes | None:
    """The file decrypted with ``password``; None when it is not an encrypted Office file or the password
    is not its own."""
    import msoffcrypto  # loaded on the first encrypted file
    from msoffcrypto import exceptions

    out = io.BytesIO()
    try:
        office = msoffcrypto.OfficeFile(io.BytesIO(data))
        if not office.is_encrypted():
            return None
        office.load_key(password=password)
        office.decrypt(out)
    except (exceptions.DecryptionError, exceptions.FileFormatError, exceptions.InvalidKeyError,
            exceptions.ParseError, OSError, ValueError, KeyError, IndexError, AssertionError):
        return None
    return out.getvalue()


def prepare_encrypted(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    plain = decrypt(data)
    if plain is None:
        raise PreparationError(NOT_DEFAULT)
    prepared, errors, kind = prepare_part(plain, url)
    if prepared is None:
        reason = "; ".join(errors) or f"no preparator reads {kind or 'it'}"
        raise PreparationError(f"decrypted with Excel's default password, then: {reason}"[:300])
    prepared.fields = {**prepared.fields, "encryption": "default password"}
    return prepared
