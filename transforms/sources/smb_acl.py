"""Who may read an SMB file: its security descriptor's DACL, reduced to the SIDs allowed to read.

The rule (Windows' own access check, per SID, for the right to read the file's data):

* ACEs are taken in order; ACEs flagged INHERIT_ONLY do not apply to the file itself and are skipped.
* An ACE concerns reading if its mask holds FILE_READ_DATA, GENERIC_READ or GENERIC_ALL.
* For each SID the first ACE that concerns reading decides: an ACCESS_DENIED ACE denies it, an
  ACCESS_ALLOWED ACE allows it. Later ACEs for that SID change nothing (a deny that comes first wins).
* A deny for a SID that every user holds (Everyone ``S-1-1-0``, Authenticated Users ``S-1-5-11``)
  that comes before an allow denies every SID not yet allowed.
* No DACL at all means full access for everyone (group ``S-1-1-0``); an empty DACL, nobody.

Denies for a group SID cannot be applied to its members without asking the directory who they are:
a file allowed to user U and denied to a group G that U belongs to lists U. This is a limit of an
index that stores allow-groups only (see the README).

Groups are the SID strings, or the names configured in ``smb.sid_names``.
"""

from __future__ import annotations

from smbprotocol.file_info import InfoType
from smbprotocol.open import InfoAdditionalInformation, SMB2QueryInfoRequest, SMB2QueryInfoResponse
from smbprotocol.security_descriptor import AccessMask, AceFlags, AceType, SMB2CreateSDBuffer

FILE_READ_DATA = 0x00000001
READ_BITS = FILE_READ_DATA | AccessMask.GENERIC_READ | AccessMask.GENERIC_ALL
EVERYONE, AUTHENTICATED_USERS = "S-1-1-0", "S-1-5-11"
_ALL_USERS = frozenset((EVERYONE, AUTHENTICATED_USERS))
_SECURITY_INFO = (InfoAdditionalInformation.OWNER_SECURTIY_INFORMATION
                  | InfoAdditionalInformation.GROUP_SECURITY_INFORMATION
                  | InfoAdditionalInformation.DACL_SECURITY_INFORMATION)


def query_security(transaction) -> None:
    """Add an SMB2 QUERY_INFO for the security descriptor (owner, group, DACL) to a file transaction;
    its result is an :class:`SMB2CreateSDBuffer`. smbprotocol has no public call for this."""
    request = SMB2QueryInfoRequest()
    request["info_type"] = InfoType.SMB2_0_INFO_SECURITY
    request["output_buffer_length"] = 64 * 1024
    request["additional_information"] = _SECURITY_INFO
    request["file_id"] = transaction.raw.fd.file_id

    def receive(sent):
        response = SMB2QueryInfoResponse()
        response.unpack(transaction.raw.fd.connection.receive(sent)["data"].get_value())
        descriptor = SMB2CreateSDBuffer()
        descriptor.unpack(response["buffer"].get_value())
        return descriptor

    transaction += (request, receive)


def aces(descriptor: SMB2CreateSDBuffer) -> list[tuple[int, int, int, str]] | None:
    """(type, flags, mask, SID) of each ACE in the DACL; None when there is no DACL."""
    dacl = descriptor.get_dacl()
    if dacl is None:
        return None
    found = []
    for ace in dacl["aces"].get_value():
        if isinstance(ace, bytes):  # object or callback ACEs: not used on file servers
            continue
        found.append((ace["ace_type"].get_value(), ace["ace_flags"].get_value(), ace["mask"].get_value(),
                      str(ace["sid"].get_value())))
    return found


def readers(entries: list[tuple[int, int, int, str]] | None) -> list[str]:
    """The SIDs allowed to read, by the rule in the module docstring, in ACE order."""
    if entries is None:
        return [EVERYONE]
    decided: dict[str, bool] = {}
    everyone_denied = False
    for ace_type, flags, mask, sid in entries:
        if flags & AceFlags.INHERIT_ONLY_ACE or not mask & READ_BITS or sid in decided:
            continue
        if ace_type == AceType.ACCESS_DENIED_ACE_TYPE:
            decided[sid] = False
            everyone_denied = everyone_denied or sid in _ALL_USERS
        elif ace_type == AceType.ACCESS_ALLOWED_ACE_TYPE:
            decided[sid] = not everyone_denied
    return [sid for sid, allowed in decided.items() if allowed]


def groups(descriptor: SMB2CreateSDBuffer, sid_names: dict[str, str]) -> list[str]:
    """Index groups of a file: its readers named through ``sid_names``."""
    return sorted({sid_names.get(sid, sid) for sid in readers(aces(descriptor))})
