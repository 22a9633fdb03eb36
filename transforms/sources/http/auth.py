"""HTTP logins per URL prefix (``credentials:`` in the configuration): Basic sent with the first request,
Digest (RFC 7616: MD5, SHA-256 and their ``-sess`` forms, ``qop=auth``) in answer to the server's
challenge. The header is built per request and per URL, so a redirect to another host never carries
it; the secret lives only in the :class:`transforms.values.Credential` and in the header sent.
"""

from __future__ import annotations

import base64
import hashlib
import os
from urllib.parse import urlsplit
from urllib.request import parse_http_list, parse_keqv_list

_HASHES = {"md5": hashlib.md5, "sha-256": hashlib.sha256}


def basic(credential) -> str:
    token = f"{credential.username}:{credential.password}".encode()
    return "Basic " + base64.b64encode(token).decode("ascii")


def digest_challenge(www_authenticate: str) -> dict[str, str] | None:
    """The parameters of a ``WWW-Authenticate: Digest …`` header, or None if it is not one."""
    scheme, _, params = (www_authenticate or "").strip().partition(" ")
    if scheme.lower() != "digest":
        return None
    return {k.lower(): v for k, v in parse_keqv_list(parse_http_list(params)).items()}


def digest(credential, method: str, url: str, challenge: dict[str, str]) -> str | None:
    """The ``Authorization`` header answering ``challenge``; None for an algorithm we do not speak."""
    algorithm = challenge.get("algorithm", "MD5")
    name = algorithm.lower().removesuffix("-sess")
    if name not in _HASHES:
        return None

    def h(text: str) -> str:
        return _HASHES[name](text.encode("utf-8")).hexdigest()

    parts = urlsplit(url)
    uri = parts.path + (f"?{parts.query}" if parts.query else "")
    realm, nonce = challenge.get("realm", ""), challenge.get("nonce", "")
    cnonce, nc = os.urandom(8).hex(), "00000001"
    ha1 = h(f"{credential.username}:{realm}:{credential.password}")
    if algorithm.lower().endswith("-sess"):
        ha1 = h(f"{ha1}:{nonce}:{cnonce}")
    ha2 = h(f"{method}:{uri}")
    qops = [q.strip() for q in challenge.get("qop", "").split(",") if q.strip()]
    fields = {"username": credential.username, "realm": realm, "nonce": nonce, "uri": uri,
              "algorithm": algorithm}
    if "auth" in qops:
        fields["response"] = h(f"{ha1}:{nonce}:{nc}:{cnonce}:auth:{ha2}")
        fields.update(qop="auth", nc=nc, cnonce=cnonce)
    else:
        fields["response"] = h(f"{ha1}:{nonce}:{ha2}")
    if "opaque" in challenge:
        fields["opaque"] = challenge["opaque"]
    unquoted = ("qop", "nc", "algorithm")
    return "Digest " + ", ".join(f"{k}={v}" if k in unquoted else f'{k}="{v}"' for k, v in fields.items())
