"""The disk shares of an SMB server (``smb://host[:port]/``): the srvsvc RPC call NetrShareEnum, level 1.

smbprotocol speaks SMB 2/3 but no DCE/RPC, so the call is written here over its named pipe
``\\\\host\\IPC$\\srvsvc``: one bind, one request, and the NDR of SHARE_INFO_1 (name, type, remark)
parsed with ``struct`` ([MS-SRVS] 3.1.4.8, [C706] chapters 12 and 14). That reuses the pooled connection,
the login and the signing or encryption smbprotocol already negotiated. The libraries were weighed
and left: pysmb's ``listShares`` offers only the SMB 2.0.2 dialect, which Samba refuses when its
``server min protocol`` is SMB2 (SMB 2.1; "Server does not support any of the pysmb dialects"), and it has
no SMB 3; impacket (1.75 MB) is a penetration-testing toolkit with its own second SMB client that pulls in
flask, ldap3, pyOpenSSL and pycryptodomex for this one call.
"""

from __future__ import annotations

import re
import struct
import uuid

from smbclient._pool import get_smb_tree
from smbprotocol.open import (
    CreateDisposition,
    FilePipePrinterAccessMask,
    ImpersonationLevel,
    Open,
    ShareAccess,
)

_SRVSVC = uuid.UUID("4b324fc8-1670-01d3-1278-5a47bf6ee188").bytes_le + struct.pack("<HH", 3, 0)
_NDR = uuid.UUID("8a885d04-1ceb-11c9-9fe8-08002b104860").bytes_le + struct.pack("<I", 2)
_FRAGMENT = 4280  # largest fragment either side sends ([C706] 12.6.3.1: the usual max_xmit_frag)
_HEADER = struct.Struct("<BBBB4sHHI")  # version, minor, type, flags, data representation, lengths, call id
_BIND, _BIND_ACK, _REQUEST, _RESPONSE, _FAULT = 11, 12, 0, 2, 3
_FIRST, _LAST = 0x01, 0x02
_NETR_SHARE_ENUM = 15
STYPE_DISKTREE = 0
_TYPE_MASK = 0x0FFFFFFF  # without STYPE_SPECIAL (0x80000000, administrative shares) and STYPE_TEMPORARY


def disk_shares(host: str, kwargs: dict) -> list[str]:
    """Names of the server's disk shares (no IPC$, printers or devices), as the server lists them.
    ``kwargs`` are smbclient's (port, connection_cache, username, password). Raises OSError, ValueError
    or SMBException when the server is down or refuses."""
    tree, _path = get_smb_tree(f"\\\\{host}\\IPC$", **kwargs)
    pipe = Open(tree, "srvsvc")
    pipe.create(ImpersonationLevel.Impersonation,
                FilePipePrinterAccessMask.FILE_READ_DATA | FilePipePrinterAccessMask.FILE_WRITE_DATA,
                0, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE, CreateDisposition.FILE_OPEN, 0)
    try:
        reply = _call(pipe, _pdu(_BIND, 1, struct.pack("<HHIB3xHBx", _FRAGMENT, _FRAGMENT, 0, 1, 0, 1)
                                 + _SRVSVC + _NDR))
        if reply[0][0] != _BIND_ACK or _bind_result(reply[0][1]) != 0:
            raise OSError("the server refused the srvsvc RPC interface")
        # ServerName NULL; InfoStruct level 1 with an empty container; PreferedMaximumLength all; no resume
        stub = struct.pack("<IIIIIIII", 0, 1, 1, 0x20000, 0, 0, 0xFFFFFFFF, 0)
        reply = _call(pipe, _pdu(_REQUEST, 2, struct.pack("<IHH", len(stub), 0, _NETR_SHARE_ENUM) + stub))
    finally:
        pipe.close()
    try:
        if reply[0][0] == _FAULT:
            raise OSError(f"NetrShareEnum failed: RPC fault 0x{struct.unpack_from('<I', reply[0][1], 8)[0]:08x}")
        shares = _share_info_1(b"".join(body[8:] for _kind, body in reply))
    except struct.error as err:
        raise OSError(f"malformed NetrShareEnum answer: {err}") from None
    return [name for name, kind in shares if kind & _TYPE_MASK == STYPE_DISKTREE]


def hidden(name: str) -> bool:
    """A share whose name ends in ``$`` is hidden: Windows clients do not show it (C$, ADMIN$, ...)."""
    return name.endswith("$")


def named_by(share_url: str, whitelist) -> bool:
    """Does a whitelist entry name this share itself (a prefix at or inside it, or a regex spelling
    its name), rather than take it in with the whole server?"""
    name = share_url.rstrip("/").rsplit("/", 1)[-1]
    return any((p.prefix is not None and (p.prefix.rstrip("/") + "/").startswith(share_url.rstrip("/") + "/"))
               or (p.regex is not None and (name in p.regex.pattern or re.escape(name) in p.regex.pattern))
               for p in whitelist)


def _pdu(kind: int, call_id: int, body: bytes) -> bytes:
    return _HEADER.pack(5, 0, kind, _FIRST | _LAST, b"\x10\0\0\0", _HEADER.size + len(body), 0, call_id) + body


def _call(pipe: Open, request: bytes) -> list[tuple[int, bytes]]:
    """Write one PDU, read the answer's fragments up to the last: [(type, body after the header)]."""
    pipe.write(request, 0)
    fragments, buffer = [], b""
    while True:
        while len(buffer) < _HEADER.size or len(buffer) < _HEADER.unpack_from(buffer)[5]:
            more = pipe.read(0, _FRAGMENT)
            if not more:
                raise OSError("the srvsvc pipe closed in the middle of an answer")
            buffer += more
        _v, _m, kind, flags, _rep, length, _auth, _id = _HEADER.unpack_from(buffer)
        if length < _HEADER.size:
            raise OSError(f"malformed RPC fragment of {length} bytes")
        fragments.append((kind, buffer[_HEADER.size:length]))
        buffer = buffer[length:]
        if flags & _LAST or kind not in (_RESPONSE,):
            return fragments


def _bind_result(body: bytes) -> int:
    """The first presentation context's result in a bind_ack (0: accepted)."""
    address_length = struct.unpack_from("<H", body, 8)[0]
    offset = 10 + address_length
    offset += -offset % 4  # the result list is 4-byte aligned from the PDU start (header is 16 bytes)
    return struct.unpack_from("<H", body, offset + 4)[0]


def _share_info_1(stub: bytes) -> list[tuple[str, int]]:
    """(name, type) of each SHARE_INFO_1 in a NetrShareEnum response stub."""
    status = struct.unpack_from("<I", stub, len(stub) - 4)[0]
    if status != 0:
        raise OSError(f"NetrShareEnum failed: WERROR 0x{status:08x}")
    level, _switch, container, count, array = struct.unpack_from("<IIIII", stub, 0)
    if level != 1 or not container or not count or not array:
        return []
    offset = 20 + 4  # past the array's conformance (its maximum count)
    entries = [struct.unpack_from("<III", stub, offset + 12 * i) for i in range(count)]
    offset += 12 * count

    def string() -> str:  # a conformant varying UTF-16 string: maximum, offset, actual count, characters
        nonlocal offset
        offset += -offset % 4
        _maximum, _first, actual = struct.unpack_from("<III", stub, offset)
        text = stub[offset + 12:offset + 12 + 2 * actual].decode("utf-16-le", "surrogatepass").rstrip("\0")
        offset += 12 + 2 * actual
        return text

    shares = []
    for name_pointer, kind, remark_pointer in entries:
        name = string() if name_pointer else ""
        if remark_pointer:
            string()
        shares.append((name, kind))
    return shares
