"""Who may read an SMB file: its security descriptor's DACL, reduced to the SIDs allowed to read.

The rule (Windows' own access check, per SID, for the right to read the file's data):

* ACEs are taken in order; ACEs flagged INHERIT_ONLY do not apply to the file itself and are skipped.
* An ACE concerns reading if its mask holds FILE_READ_DATA, GENERIC_READ or GENERIC_ALL.
* For each SID the first ACE that concerns reading decides: an ACCESS_DENIED ACE denies it, an
  ACCESS_ALLOWED ACE allows it. Later ACEs for that SID change nothing (a deny that comes first wins).
* A deny for a SID that every user holds (Everyone ``S-1-1-0``, Authenticated Users ``S-1-5-11``)
  that comes before an allow denies every SID not yet allowed.
* No DACL at all means full access for everyone (group ``S-1-1-0``); an empty DACL, nobody.

Denies for a group SID cannot be applied to its members without asking the directory who they are,
and a deny for a user is lost in a group that allows it (``D;bob``, ``A;staff``: bob is in staff). So
the SIDs denied are stored with the document (``denied``) and the index hides it from a searcher who
holds any of them (``--groups bob,staff`` does not find it; nor does a member of a denied group allowed
by name). A deny is taken to come before the allows, as Windows writes DACLs (canonical order); in a
DACL that is not, a deny after an allow still hides the document from its SID (fail closed).

Groups are the SID strings, or the names configured in ``smb.sid_names``.
"""

from __future__ import annotations

from typing import NamedTuple

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


class Access(NamedTuple):
    groups: list[str]  # may read
    denied: list[str]  # may not, whatever else they hold


def readers(entries: list[tuple[int, int, int, str]] | None) -> list[str]:
    """The SIDs allowed to read, by the rule in the module docstring, in ACE order."""
    return [sid for sid, allowed in _decisions(entries).items() if allowed]


def deniers(entries: list[tuple[int, int, int, str]] | None) -> list[str]:
    """The SIDs denied reading, in ACE order."""
    return [sid for sid, allowed in _decisions(entries).items() if not allowed]


def _decisions(entries: list[tuple[int, int, int, str]] | None) -> dict[str, bool]:
    """SID → allowed to read, for every SID an ACE decides."""
    if entries is None:
        return {EVERYONE: True}
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
    return decided


def access(descriptor: SMB2CreateSDBuffer, sid_names: dict[str, str]) -> Access:
    """Index groups and denies of a file: its readers and deniers named through ``sid_names``."""
    entries = aces(descriptor)
    return Access(sorted({sid_names.get(sid, sid) for sid in readers(entries)}),
                  sorted({sid_names.get(sid, sid) for sid in deniers(entries)}))
