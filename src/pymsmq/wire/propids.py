"""Property identifiers: every PROPID of [MS-MQMQ] 2.3 and the message PROPID_M_* of the Windows SDK.

A PROPID is an unsigned 32-bit value ([MS-MQMQ] 2.3: "typedef unsigned long PROPID"); properties
travel as parallel arrays of PROPIDs and PROPVARIANTs, and the PROPVARIANT's vt MUST be the
VARTYPE listed here.  Each identifier is a module constant (``PROPID_Q_LABEL == 108``) and a
``PropId`` row (name, value, vartype, family, description, section) in the tables:

- ``BY_NAME``: every identifier by its symbolic name.
- ``BY_VALUE[family][value]``: numbers are unique only inside a family -- the two management
  families reuse 1..27 and the message properties 1..75 ([MS-MQMQ] 2.3.11/2.3.12 vs mq.h) --
  so a value is looked up together with the family of the call it came from.
- ``DIRECTORY_BY_VALUE``: the directory-object families (queue, machine, site, connected
  network, enterprise, user, routing link, settings, MQUser, computer, deletion notification),
  whose numbers are disjoint ([MS-MQMQ] 2.3.1-2.3.10, 2.3.13).

VARTYPEs are ``VarType`` members; vector types are the combined values (VT_VECTOR | VT_LPWSTR
is ``VarType.VT_VECTOR_LPWSTR``, 0x101F).  Where [MS-MQMQ] 2.3.12.25 writes
"12 | 0x1000 - VT_VARIANT | VT_VECTOR" for PROPID_MGMT_QUEUE_CONNECTION_HISTORY, that is
VT_VECTOR | VT_VARIANT (0x100C).  ``section`` is the [MS-MQMQ] subsection that defines the
identifier (subsections are numbered in the spec's order, which is not always numeric order:
PROPID_QM_QUOTA 214 is 2.3.2.10, PROPID_U_SIGN_CERT 702 is 2.3.6.4, PROPID_E_CIPHER_MODE 615 is
2.3.5.18); it is empty for the PROPID_M_* rows.

Message properties (PROPID_M_*) are not in [MS-MQMQ].  Their values are those of the Windows SDK
header mq.h; their VARTYPEs are the "Type Indicator" of each property's page in the Message
Queuing documentation.  Cross-checked against these public sources:

1. mingw-w64, ``mingw-w64-headers/include/mq.h`` (a clean-room copy of the SDK header): values
   PROPID_M_CLASS (1) .. PROPID_M_SOAP_BODY (66); 56 and 57 are unassigned.
2. Microsoft's Win32 metadata as shipped in ``microsoft/windows-rs``
   (``windows-sys`` ``Win32::System::MessageQueuing``): the same values plus
   PROPID_M_DEADLETTER_QUEUE (67) .. PROPID_M_MOVE_COUNT (70) and PROPID_M_LAST_MOVE_TIME (75).
3. The .NET Framework reference source (WCF ``System.ServiceModel.Channels.UnsafeNativeMethods``),
   which lists every value with its VARTYPE in a comment, including PROPID_M_GROUP_ID (71),
   _GROUP_ID_LEN (72), _FIRST_IN_GROUP (73) and _LAST_IN_GROUP (74) that no public mq.h has.
4. The Message Queuing reference pages on learn.microsoft.com (e.g. PROPID_M_LOOKUPID: "Type
   Indicator VT_UI8"; PROPID_M_DEADLETTER_QUEUE: VT_LPWSTR; _DEADLETTER_QUEUE_LEN: VT_UI4).
All four agree wherever they overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Final

from pymsmq.wire.vartype import VarType
from pymsmq.wire.vartype import VarType as _V  # noqa: N814 - a short alias keeps each row on one line


class PropFamily(Enum):
    """A group of property identifiers; the value is its [MS-MQMQ] section (``"mq.h"`` for messages)."""

    QUEUE = "2.3.1"
    MACHINE = "2.3.2"
    SITE = "2.3.3"
    CONNECTED_NETWORK = "2.3.4"
    ENTERPRISE = "2.3.5"
    USER = "2.3.6"
    ROUTING_LINK = "2.3.7"
    SETTINGS = "2.3.8"
    MQUSER = "2.3.9"
    COMPUTER = "2.3.10"
    MGMT_MACHINE = "2.3.11"
    MGMT_QUEUE = "2.3.12"
    DELETION_NOTIFICATION = "2.3.13"
    MESSAGE = "mq.h"


@dataclass(frozen=True, slots=True)
class PropId:
    """One property identifier: its symbolic name, number, VARTYPE and where it is defined."""

    name: str
    value: int
    vartype: VarType
    family: PropFamily
    description: str
    section: str = ""

    @property
    def is_vector(self) -> bool:
        """Whether the value is a counted array (VT_VECTOR combined with an element type)."""
        return bool(self.vartype & 0x1000)


class _Registrar:
    """Collects (value, vartype, description) rows of one family while the constants are defined."""

    __slots__ = ("family", "rows")

    def __init__(self, family: PropFamily) -> None:
        self.family = family
        self.rows: list[tuple[int, VarType, str]] = []

    def __call__(self, value: int, vartype: VarType, description: str) -> int:
        self.rows.append((value, vartype, description))
        return value


_REGISTRARS: Final = {family: _Registrar(family) for family in PropFamily}
_q = _REGISTRARS[PropFamily.QUEUE]
_qm = _REGISTRARS[PropFamily.MACHINE]
_s = _REGISTRARS[PropFamily.SITE]
_cn = _REGISTRARS[PropFamily.CONNECTED_NETWORK]
_e = _REGISTRARS[PropFamily.ENTERPRISE]
_u = _REGISTRARS[PropFamily.USER]
_l = _REGISTRARS[PropFamily.ROUTING_LINK]
_set = _REGISTRARS[PropFamily.SETTINGS]
_mqu = _REGISTRARS[PropFamily.MQUSER]
_com = _REGISTRARS[PropFamily.COMPUTER]
_mgmt_msmq = _REGISTRARS[PropFamily.MGMT_MACHINE]
_mgmt_queue = _REGISTRARS[PropFamily.MGMT_QUEUE]
_d = _REGISTRARS[PropFamily.DELETION_NOTIFICATION]
_m = _REGISTRARS[PropFamily.MESSAGE]

# Each constant below is registered in definition order, and only through its family's
# registrar; _build() pairs the rows with the constant names in that same order.

# [MS-MQMQ] 2.3.1 Queue Property Identifiers.
PROPID_Q_INSTANCE: Final = _q(101, _V.VT_CLSID, "GUID of the queue")
PROPID_Q_TYPE: Final = _q(
    102, _V.VT_CLSID, "user-defined service-type GUID; optional at creation, changeable later"
)
PROPID_Q_PATHNAME: Final = _q(
    103, _V.VT_LPWSTR, "queue path name (QueuePathName ABNF, 2.1.1); set at creation, immutable"
)
PROPID_Q_JOURNAL: Final = _q(104, _V.VT_UI1, "target journaling: 0 MQ_JOURNAL_NONE (default), 1 MQ_JOURNAL")
PROPID_Q_QUOTA: Final = _q(105, _V.VT_UI4, "max queue size in KB (unset -> limited by disk/computer quota)")
PROPID_Q_BASEPRIORITY: Final = _q(106, _V.VT_I2, "base priority -32768..32767 (0x8000..0x7FFF), default 0")
PROPID_Q_JOURNAL_QUOTA: Final = _q(107, _V.VT_UI4, "max journal size in KB")
PROPID_Q_LABEL: Final = _q(108, _V.VT_LPWSTR, "descriptive label, max 124 characters")
PROPID_Q_CREATE_TIME: Final = _q(109, _V.VT_I4, "creation time, Unix seconds")
PROPID_Q_MODIFY_TIME: Final = _q(110, _V.VT_I4, "last property change, Unix seconds")
PROPID_Q_AUTHENTICATE: Final = _q(111, _V.VT_UI1, "0x00 MQ_AUTHENTICATE_NONE, 0x01 MQ_AUTHENTICATE")
PROPID_Q_PRIV_LEVEL: Final = _q(112, _V.VT_UI4, "0 MQ_PRIV_LEVEL_NONE, 1 _OPTIONAL (default), 2 _BODY")
PROPID_Q_TRANSACTION: Final = _q(113, _V.VT_UI1, "0x00 MQ_TRANSACTIONAL_NONE, 0x01 MQ_TRANSACTIONAL")
PROPID_Q_SCOPE: Final = _q(114, _V.VT_UI1, "0x00 MQDS_SITESCOPE, 0x01 MQDS_ENTERPRISESCOPE")
PROPID_Q_QMID: Final = _q(115, _V.VT_CLSID, "GUID of the hosting queue manager")
PROPID_Q_PARTITIONID: Final = _q(116, _V.VT_CLSID, "MAY group directory objects (mixed-mode only)")
PROPID_Q_SEQNUM: Final = _q(
    117, _V.VT_BLOB, "sequence number of the queue object (blob format not defined here)"
)
PROPID_Q_HASHKEY: Final = _q(118, _V.VT_UI4, "reserved - value undefined, MUST NOT be interpreted")
PROPID_Q_LABEL_HASHKEY: Final = _q(119, _V.VT_UI4, "reserved - value undefined, MUST NOT be interpreted")
PROPID_Q_FULL_PATH: Final = _q(121, _V.VT_LPWSTR, "DN of the queue object in AD (MSMQ 2.0+)")
PROPID_Q_NAME_SUFFIX: Final = _q(
    123, _V.VT_LPWSTR, "remainder of queue name beyond 64 chars (AD Common-Name limit) (2.0+)"
)
PROPID_Q_PATHNAME_DNS: Final = _q(
    124, _V.VT_LPWSTR, "path name with the computer as FQDN (QueuePathName ABNF) (2.0+)"
)
PROPID_Q_MULTICAST_ADDRESS: Final = _q(125, _V.VT_LPWSTR, "'a.b.c.d:port' IP multicast address (3.0+)")
PROPID_Q_ADS_PATH: Final = _q(126, _V.VT_LPWSTR, "LDAP URL (RFC 4516) of the public queue object (3.0+)")
PROPID_Q_SECURITY: Final = _q(
    1101, _V.VT_BLOB, "SECURITY_DESCRIPTOR ([MS-DTYP] 2.4.6); ACE types limited to NT4 ones"
)
PROPID_Q_OBJ_SECURITY: Final = _q(1102, _V.VT_BLOB, "SECURITY_DESCRIPTOR of the queue object (2.0+)")
PROPID_Q_SECURITY_INFORMATION: Final = _q(1103, _V.VT_UI4, "SECURITY_INFORMATION bits for get/set of the SD")

# [MS-MQMQ] 2.3.2 Machine Property Identifiers.
PROPID_QM_SITE_ID: Final = _qm(201, _V.VT_CLSID, "GUID of the site containing the QM")
PROPID_QM_MACHINE_ID: Final = _qm(202, _V.VT_CLSID, "GUID of the queue manager")
PROPID_QM_PATHNAME: Final = _qm(203, _V.VT_LPWSTR, "computer name of the QM")
PROPID_QM_ENCRYPTION_PK: Final = _qm(
    205, _V.VT_VECTOR_UI1, "public encryption key; superseded by PROPID_QM_ENCRYPTION_PK_BASE if present"
)
PROPID_QM_ADDRESS: Final = _qm(206, _V.VT_BLOB, "network address(es): packed array of TA_ADDRESS")
PROPID_QM_CNS: Final = _qm(207, _V.VT_VECTOR_CLSID, "connected-network GUIDs supported by the QM")
PROPID_QM_OUTFRS: Final = _qm(208, _V.VT_VECTOR_CLSID, "GUIDs of outgoing routing servers")
PROPID_QM_INFRS: Final = _qm(209, _V.VT_VECTOR_CLSID, "GUIDs of incoming routing servers")
PROPID_QM_SERVICE: Final = _qm(
    210, _V.VT_UI4, "0 none, 0x1 routing server, 0x2 BSC, 0x4 PSC, 0x8 PEC, 0x10 RAS server"
)
PROPID_QM_QUOTA: Final = _qm(214, _V.VT_UI4, "disk quota for all queues of the QM, 0..0xFFFFFFFF")
PROPID_QM_PARTITIONID: Final = _qm(211, _V.VT_CLSID, "MAY group directory objects (mixed-mode only)")
PROPID_QM_HASHKEY: Final = _qm(212, _V.VT_UI4, "reserved - MUST NOT be interpreted")
PROPID_QM_SEQNUM: Final = _qm(213, _V.VT_BLOB, "sequence number of the QM object")
PROPID_QM_JOURNAL_QUOTA: Final = _qm(215, _V.VT_UI4, "system-wide journal quota in KB, 0..0xFFFFFFFF")
PROPID_QM_MACHINE_TYPE: Final = _qm(
    216, _V.VT_LPWSTR, "OS + MSMQ version text; may be empty or MachineType ABNF"
)
PROPID_QM_CREATE_TIME: Final = _qm(217, _V.VT_I4, "directory object creation time, Unix seconds")
PROPID_QM_MODIFY_TIME: Final = _qm(218, _V.VT_I4, "directory object modification time, Unix seconds")
PROPID_QM_FOREIGN: Final = _qm(219, _V.VT_UI1, "0x01 FOREIGN_MACHINE, 0x00 MSMQ_MACHINE")
PROPID_QM_OS: Final = _qm(
    220, _V.VT_UI4, "MSMQ_OS_NONE 0, _FOREIGN 0x100, _95 0x200, _NTW 0x300, _NTS 0x400, _NTE 0x500"
)
PROPID_QM_FULL_PATH: Final = _qm(
    221, _V.VT_LPWSTR, "DN (RFC 4514) of the MSMQ Configuration object (not 1.0)"
)
PROPID_QM_SITE_IDS: Final = _qm(222, _V.VT_VECTOR_CLSID, "GUIDs of all sites of the computer (not 1.0)")
PROPID_QM_OUTFRS_DN: Final = _qm(223, _V.VT_VECTOR_LPWSTR, "DNs of outgoing routing servers (not 1.0)")
PROPID_QM_INFRS_DN: Final = _qm(224, _V.VT_VECTOR_LPWSTR, "DNs of incoming routing servers (not 1.0)")
PROPID_QM_SERVICE_ROUTING: Final = _qm(
    227, _V.VT_UI1, "0x00 not / 0x01 is a routing server; SHOULD be set only by installer (not 1.0)"
)
PROPID_QM_SERVICE_DSSERVER: Final = _qm(228, _V.VT_UI1, "provides MQDS services (stored as Boolean in AD)")
PROPID_QM_SERVICE_DEPCLIENTS: Final = _qm(
    229, _V.VT_UI1, "acts as MSMQ supporting server (stored as Boolean in AD)"
)
PROPID_QM_ENCRYPTION_PK_BASE: Final = _qm(
    231, _V.VT_VECTOR_UI1, "public encryption key (base provider) (not 1.0)"
)
PROPID_QM_ENCRYPTION_PK_ENHANCED: Final = _qm(
    232, _V.VT_VECTOR_UI1, "enhanced (128-bit) public encryption key (not 1.0)"
)
PROPID_QM_PATHNAME_DNS: Final = _qm(233, _V.VT_LPWSTR, "FQDN of the computer (not 1.0)")
PROPID_QM_OBJ_SECURITY: Final = _qm(
    234, _V.VT_BLOB, "SECURITY_DESCRIPTOR of the MSMQ Configuration object (not 1.0)"
)
PROPID_QM_SECURITY_INFORMATION: Final = _qm(237, _V.VT_UI4, "SECURITY_INFORMATION bits")
PROPID_QM_ENCRYPT_PKS: Final = _qm(238, _V.VT_BLOB, "MQDSPUBLICKEYS of encryption keys")
PROPID_QM_SIGN_PKS: Final = _qm(239, _V.VT_BLOB, "MQDSPUBLICKEYS of signing keys")
PROPID_QM_OWNER_SID: Final = _qm(241, _V.VT_BLOB, "SID of the user who ran setup (2.0+)")
PROPID_QM_GROUP_IN_CLUSTER: Final = _qm(
    242, _V.VT_UI1, "0x00 MSMQ_GROUP_NOT_IN_CLUSTER, 0x01 MSMQ_GROUP_IN_CLUSTER (2.0+)"
)
PROPID_QM_SECURITY: Final = _qm(1201, _V.VT_BLOB, "SECURITY_DESCRIPTOR of the machine object")
PROPID_QM_SIGN_PK: Final = _qm(
    1202, _V.VT_BLOB, "MQDSPUBLICKEYS signing keys; settable only at object creation"
)
PROPID_QM_ENCRYPT_PK: Final = _qm(
    1203, _V.VT_BLOB, "MQDSPUBLICKEYS encryption keys; settable only at object creation"
)
PROPID_QM_UPGRADE_DACL: Final = _qm(
    1205, _V.VT_BLOB, "dummy: a set asks the PEC to update the DACL; value ignored"
)

# [MS-MQMQ] 2.3.3 Site Property Identifiers.
PROPID_S_PATHNAME: Final = _s(301, _V.VT_LPWSTR, "site name")
PROPID_S_SITEID: Final = _s(302, _V.VT_CLSID, "site GUID")
PROPID_S_GATES: Final = _s(303, _V.VT_VECTOR_CLSID, "GUIDs of MSMQ Configuration objects of the site gates")
PROPID_S_PSC: Final = _s(304, _V.VT_LPWSTR, "computer name of the site PSC")
PROPID_S_INTERVAL1: Final = _s(
    305, _V.VT_UI2, "mixed-mode intra-site replication interval, seconds; default 2"
)
PROPID_S_INTERVAL2: Final = _s(
    306, _V.VT_UI2, "mixed-mode inter-site replication interval, seconds; default 10"
)
PROPID_S_PARTITIONID: Final = _s(307, _V.VT_CLSID, "MAY group directory objects")
PROPID_S_SEQNUM: Final = _s(308, _V.VT_BLOB, "sequence number of the site object")
PROPID_S_FULL_NAME: Final = _s(309, _V.VT_LPWSTR, "DN of the site in AD (not 1.0)")
PROPID_S_NT4_STUB: Final = _s(310, _V.VT_UI2, "0x01 migrated from MQIS, 0x00 not (note: VT_UI2) (not 1.0)")
PROPID_S_FOREIGN: Final = _s(311, _V.VT_UI1, "0x01 site is an external (foreign) system, 0x00 not (not 1.0)")
PROPID_S_DONOTHING: Final = _s(312, _V.VT_UI1, "mixed-mode replication placeholder; value unused (not 1.0)")
PROPID_S_SECURITY: Final = _s(1301, _V.VT_BLOB, "SECURITY_DESCRIPTOR of the site")
PROPID_S_PSC_SIGNPK: Final = _s(1302, _V.VT_BLOB, "PSC signing key as MQDSPUBLICKEYS")
PROPID_S_SECURITY_INFORMATION: Final = _s(1303, _V.VT_UI4, "SECURITY_INFORMATION bits (not 1.0, not 2.0)")

# [MS-MQMQ] 2.3.4 Connected Network Property Identifiers.
PROPID_CN_PROTOCOLID: Final = _cn(
    501, _V.VT_UI1, "0x01 IP, 0x03 IPX, 0x05 FOREIGN (TA_ADDRESS AddressType values)"
)
PROPID_CN_NAME: Final = _cn(502, _V.VT_LPWSTR, "user-defined connected-network name")
PROPID_CN_GUID: Final = _cn(503, _V.VT_CLSID, "connected-network GUID")
PROPID_CN_PARTITIONID: Final = _cn(504, _V.VT_CLSID, "MAY group directory objects")
PROPID_CN_SEQNUM: Final = _cn(505, _V.VT_BLOB, "sequence number of the CN object")
PROPID_CN_SECURITY: Final = _cn(1501, _V.VT_BLOB, "SECURITY_DESCRIPTOR of the CN")

# [MS-MQMQ] 2.3.5 Enterprise Object Property Identifiers.
PROPID_E_NAME: Final = _e(601, _V.VT_LPWSTR, "enterprise name")
PROPID_E_NAMESTYLE: Final = _e(602, _V.VT_UI1, "weakened security: 0x00 off, 0x01 on, 0x02 internal default")
PROPID_E_CSP_NAME: Final = _e(
    603, _V.VT_LPWSTR, "CSP name (default Microsoft Enhanced RSA and AES Cryptographic Provider)"
)
PROPID_E_PECNAME: Final = _e(604, _V.VT_LPWSTR, "PEC machine name")
PROPID_E_S_INTERVAL1: Final = _e(605, _V.VT_UI2, "reserved - MUST NOT be interpreted")
PROPID_E_S_INTERVAL2: Final = _e(606, _V.VT_UI2, "reserved - MUST NOT be interpreted")
PROPID_E_PARTITIONID: Final = _e(607, _V.VT_CLSID, "MAY group directory objects")
PROPID_E_SEQNUM: Final = _e(608, _V.VT_BLOB, "sequence number of the enterprise object")
PROPID_E_ID: Final = _e(609, _V.VT_CLSID, "GUID of the enterprise object")
PROPID_E_CRL: Final = _e(610, _V.VT_BLOB, "reserved - MUST NOT be interpreted")
PROPID_E_CSP_TYPE: Final = _e(611, _V.VT_UI4, "reserved - MUST NOT be interpreted")
PROPID_E_ENCRYPT_ALG: Final = _e(612, _V.VT_UI4, "reserved - MUST NOT be interpreted")
PROPID_E_SIGN_ALG: Final = _e(613, _V.VT_UI4, "reserved - MUST NOT be interpreted")
PROPID_E_HASH_ALG: Final = _e(614, _V.VT_UI4, "reserved - MUST NOT be interpreted")
PROPID_E_LONG_LIVE: Final = _e(616, _V.VT_UI4, "default time-to-reach-queue for sent messages, seconds")
PROPID_E_VERSION: Final = _e(617, _V.VT_UI2, "version number of MQDS information")
PROPID_E_SECURITY: Final = _e(1601, _V.VT_BLOB, "SECURITY_DESCRIPTOR of the enterprise")
PROPID_E_CIPHER_MODE: Final = _e(615, _V.VT_UI4, "reserved - MUST NOT be interpreted")

# [MS-MQMQ] 2.3.6 User Object Property Identifiers.
PROPID_U_SID: Final = _u(701, _V.VT_BLOB, "user SID ([MS-DTYP] 2.4.2.2, SubAuthority u32 LE)")
PROPID_U_PARTITIONID: Final = _u(703, _V.VT_CLSID, "MAY group directory objects")
PROPID_U_SEQNUM: Final = _u(704, _V.VT_BLOB, "sequence number of the user object")
PROPID_U_SIGN_CERT: Final = _u(702, _V.VT_BLOB, "MQUSERSIGNCERTS (several X.509 certs)")
PROPID_U_DIGEST: Final = _u(705, _V.VT_VECTOR_CLSID, "MD5 digests (16 bytes each) of the certificates")
PROPID_U_ID: Final = _u(706, _V.VT_CLSID, "GUID of the user object")

# [MS-MQMQ] 2.3.7 Routinglink Property Identifiers.
PROPID_L_NEIGHBOR1: Final = _l(801, _V.VT_CLSID, "GUID of one linked site")
PROPID_L_NEIGHBOR2: Final = _l(802, _V.VT_CLSID, "GUID of the other linked site")
PROPID_L_COST: Final = _l(803, _V.VT_UI4, "relative link cost 1..999999, default 1")
PROPID_L_PARTITIONID: Final = _l(804, _V.VT_CLSID, "MAY group directory objects")
PROPID_L_SEQNUM: Final = _l(805, _V.VT_BLOB, "sequence number of the routing-link object")
PROPID_L_ID: Final = _l(806, _V.VT_CLSID, "GUID of the routing-link object")
PROPID_L_GATES_DN: Final = _l(
    807, _V.VT_VECTOR_LPWSTR, "DNs of MSMQ Configuration objects of the link's site gates (not 1.0, not 2.0)"
)
PROPID_L_NEIGHBOR1_DN: Final = _l(808, _V.VT_LPWSTR, "DN of one site (not 1.0)")
PROPID_L_NEIGHBOR2_DN: Final = _l(809, _V.VT_LPWSTR, "DN of the other site (not 1.0)")
PROPID_L_DESCRIPTION: Final = _l(810, _V.VT_LPWSTR, "link description (not 1.0)")
PROPID_L_FULL_PATH: Final = _l(811, _V.VT_LPWSTR, "DN of the routing-link object (not 1.0)")
PROPID_L_ACTUAL_COST: Final = _l(812, _V.VT_UI4, "untranslated link cost, MUST be 1..999999 (not 1.0)")
PROPID_L_GATES: Final = _l(
    813, _V.VT_VECTOR_CLSID, "GUIDs of MSMQ Configuration objects of the site gates (not 1.0)"
)

# [MS-MQMQ] 2.3.8 Settings Property Identifiers.
PROPID_SET_NAME: Final = _set(5101, _V.VT_LPWSTR, "Common-Name, MUST always be 'MSMQ Settings'")
PROPID_SET_SERVICE: Final = _set(
    5102, _V.VT_UI4, "0 none, 0x1 routing server (SRV), 0x2 BSC, 0x4 PSC, 0x8 PEC"
)
PROPID_SET_QM_ID: Final = _set(5103, _V.VT_CLSID, "GUID of the computer's MSMQ Configuration object")
PROPID_SET_FULL_PATH: Final = _set(5105, _V.VT_LPWSTR, "DN of the MSMQ Settings object")
PROPID_SET_NT4: Final = _set(5106, _V.VT_UI1, "0x01 server is MSMQ 1.0, 0x00 not")
PROPID_SET_PARTITIONID: Final = _set(5107, _V.VT_CLSID, "MAY group directory objects")
PROPID_SET_SITENAME: Final = _set(5108, _V.VT_LPWSTR, "site name")
PROPID_SET_SERVICE_ROUTING: Final = _set(5109, _V.VT_UI1, "0x01 routing server, 0x00 not")
PROPID_SET_SERVICE_DSSERVER: Final = _set(
    5110, _V.VT_UI1, "0x01 provides AD access to MSMQ 2.0 DS clients, 0x00 not"
)
PROPID_SET_SERVICE_DEPCLIENTS: Final = _set(5111, _V.VT_UI1, "0x01 can be a supporting server, 0x00 not")
PROPID_SET_OLDSERVICE: Final = _set(5112, _V.VT_UI4, "same value set as PROPID_SET_SERVICE (0,1,2,4,8)")

# [MS-MQMQ] 2.3.9 MQUser Property Identifiers.
PROPID_MQU_SID: Final = _mqu(5401, _V.VT_BLOB, "migrated user SID")
PROPID_MQU_SIGN_CERT: Final = _mqu(5402, _V.VT_BLOB, "one X.509 certificate (RFC 3280) of the migrated user")
PROPID_MQU_DIGEST: Final = _mqu(5405, _V.VT_VECTOR_CLSID, "MD5 digests (16 bytes each) of certificates")
PROPID_MQU_ID: Final = _mqu(5406, _V.VT_CLSID, "GUID of the MQUser object")
PROPID_MQU_SECURITY: Final = _mqu(5407, _V.VT_BLOB, "SECURITY_DESCRIPTOR of the MQUser object")

# [MS-MQMQ] 2.3.10 Computer Property Identifiers.
PROPID_COM_FULL_PATH: Final = _com(5201, _V.VT_LPWSTR, "DN of the computer object")
PROPID_COM_SAM_ACCOUNT: Final = _com(
    5202, _V.VT_LPWSTR, "computer account name: computer name (max 19 chars) + '$'"
)
PROPID_COM_ACCOUNT_CONTROL: Final = _com(
    5204, _V.VT_UI4, "userAccountControl bitmask of UF_* flags ([MS-SAMR] 2.2.1.13)"
)
PROPID_COM_DNS_HOSTNAME: Final = _com(5205, _V.VT_LPWSTR, "FQDN of the computer (dNSHostName)")
PROPID_COM_SID: Final = _com(5206, _V.VT_BLOB, "computer SID (added to MSMQ configuration DACL at creation)")
PROPID_COM_SIGN_CERT: Final = _com(5207, _V.VT_BLOB, "one X.509 certificate of the computer object")
PROPID_COM_DIGEST: Final = _com(5208, _V.VT_VECTOR_CLSID, "MD5 digests (16 bytes each) of certificates")
PROPID_COM_ID: Final = _com(5209, _V.VT_CLSID, "GUID of the computer object")

# [MS-MQMQ] 2.3.11 Management Machine Property Identifiers.
PROPID_MGMT_MSMQ_ACTIVEQUEUES: Final = _mgmt_msmq(1, _V.VT_VECTOR_LPWSTR, "format names of all active queues")
PROPID_MGMT_MSMQ_PRIVATEQ: Final = _mgmt_msmq(
    2, _V.VT_VECTOR_LPWSTR, "path names of all private queues on the computer"
)
PROPID_MGMT_MSMQ_DSSERVER: Final = _mgmt_msmq(
    3, _V.VT_LPWSTR, "current MQDS server name, prefixed with two backslashes"
)
PROPID_MGMT_MSMQ_CONNECTED: Final = _mgmt_msmq(4, _V.VT_LPWSTR, "'CONNECTED' or 'DISCONNECTED'")
PROPID_MGMT_MSMQ_TYPE: Final = _mgmt_msmq(5, _V.VT_LPWSTR, "OS and MSMQ version/build string")
PROPID_MGMT_MSMQ_BYTES_IN_ALL_QUEUES: Final = _mgmt_msmq(
    6, _V.VT_I8, "message bytes in all queues (not 1.0/2.0)"
)

# [MS-MQMQ] 2.3.12 Management Queue Property Identifiers.
PROPID_MGMT_QUEUE_PATHNAME: Final = _mgmt_queue(1, _V.VT_LPWSTR, "path name of the queue (2.1.1)")
PROPID_MGMT_QUEUE_FORMATNAME: Final = _mgmt_queue(2, _V.VT_LPWSTR, "format name of the queue (2.1)")
PROPID_MGMT_QUEUE_TYPE: Final = _mgmt_queue(
    3, _V.VT_LPWSTR, "'PUBLIC' / 'PRIVATE' / 'MACHINE' / 'CONNECTOR' / 'MULTICAST'"
)
PROPID_MGMT_QUEUE_LOCATION: Final = _mgmt_queue(4, _V.VT_LPWSTR, "'LOCAL' / 'REMOTE'")
PROPID_MGMT_QUEUE_XACT: Final = _mgmt_queue(5, _V.VT_LPWSTR, "'UNKNOWN' / 'YES' / 'NO' (transactional)")
PROPID_MGMT_QUEUE_FOREIGN: Final = _mgmt_queue(6, _V.VT_LPWSTR, "'UNKNOWN' / 'YES' / 'NO' (foreign)")
PROPID_MGMT_QUEUE_MESSAGE_COUNT: Final = _mgmt_queue(7, _V.VT_UI4, "messages in the queue")
PROPID_MGMT_QUEUE_BYTES_IN_QUEUE: Final = _mgmt_queue(8, _V.VT_UI4, "message bytes in the queue (3.0+)")
PROPID_MGMT_QUEUE_JOURNAL_MESSAGE_COUNT: Final = _mgmt_queue(9, _V.VT_UI4, "messages in the queue journal")
PROPID_MGMT_QUEUE_BYTES_IN_JOURNAL: Final = _mgmt_queue(
    10, _V.VT_UI4, "message bytes in the queue journal (3.0+)"
)
PROPID_MGMT_QUEUE_STATE: Final = _mgmt_queue(11, _V.VT_LPWSTR, "outgoing-queue state string")
PROPID_MGMT_QUEUE_NEXTHOPS: Final = _mgmt_queue(
    12, _V.VT_VECTOR_LPWSTR, "next-hop addresses: 'IP=' / 'FOREIGN=' / 'IPv6=' strings"
)
PROPID_MGMT_QUEUE_EOD_LAST_ACK: Final = _mgmt_queue(
    13, _V.VT_BLOB, "SEQUENCE_INFO of last message with order ack received"
)
PROPID_MGMT_QUEUE_EOD_LAST_ACK_TIME: Final = _mgmt_queue(14, _V.VT_I4, "time of last order ack, Unix seconds")
PROPID_MGMT_QUEUE_EOD_LAST_ACK_COUNT: Final = _mgmt_queue(
    15, _V.VT_UI4, "times the last order ack was received"
)
PROPID_MGMT_QUEUE_EOD_FIRST_NON_ACK: Final = _mgmt_queue(
    16, _V.VT_BLOB, "SEQUENCE_INFO of first message without order ack"
)
PROPID_MGMT_QUEUE_EOD_LAST_NON_ACK: Final = _mgmt_queue(
    17, _V.VT_BLOB, "SEQUENCE_INFO of last message without order ack"
)
PROPID_MGMT_QUEUE_EOD_NEXT_SEQ: Final = _mgmt_queue(18, _V.VT_BLOB, "SEQUENCE_INFO of next message to send")
PROPID_MGMT_QUEUE_EOD_NO_READ_COUNT: Final = _mgmt_queue(
    19, _V.VT_UI4, "messages order-acked but without receive ack"
)
PROPID_MGMT_QUEUE_EOD_NO_ACK_COUNT: Final = _mgmt_queue(20, _V.VT_UI4, "messages without order ack")
PROPID_MGMT_QUEUE_EOD_RESEND_TIME: Final = _mgmt_queue(21, _V.VT_I4, "next resend attempt time, Unix seconds")
PROPID_MGMT_QUEUE_EOD_RESEND_INTERVAL: Final = _mgmt_queue(
    22, _V.VT_UI4, "resend interval for un-acked messages, seconds"
)
PROPID_MGMT_QUEUE_EOD_RESEND_COUNT: Final = _mgmt_queue(23, _V.VT_UI4, "times the last message was sent")
PROPID_MGMT_QUEUE_EOD_SOURCE_INFO: Final = _mgmt_queue(
    24, _V.VT_VECTOR_VARIANT, "six parallel vectors on incoming transactional streams"
)
PROPID_MGMT_QUEUE_CONNECTION_HISTORY: Final = _mgmt_queue(
    25, _V.VT_VECTOR_VARIANT, "four parallel vectors of connection history"
)
PROPID_MGMT_QUEUE_SUBQUEUE_COUNT: Final = _mgmt_queue(26, _V.VT_UI4, "number of subqueues")
PROPID_MGMT_QUEUE_SUBQUEUE_NAMES: Final = _mgmt_queue(27, _V.VT_VECTOR_LPWSTR, "subqueue names (2.1)")

# [MS-MQMQ] 2.3.13 Deletion Notification Property Identifiers.
PROPID_D_SEQNUM: Final = _d(1401, _V.VT_BLOB, "sequence number of the deleted object")
PROPID_D_PARTITIONID: Final = _d(1402, _V.VT_CLSID, "MAY group directory objects")
PROPID_D_SCOPE: Final = _d(1403, _V.VT_UI1, "0 MQDS_SITESCOPE, 1 MQDS_ENTERPRISESCOPE")
PROPID_D_OBJTYPE: Final = _d(
    1404, _V.VT_UI1, "type of the deleted object (1 MQDS_QUEUE .. 8 MQDS_ROUTINGLINK)"
)
PROPID_D_IDENTIFIER: Final = _d(1405, _V.VT_CLSID, "GUID of the deleted object")

# Message properties: the Windows SDK mq.h (not [MS-MQMQ]; sources in the module docstring).
PROPID_M_CLASS: Final = _m(1, _V.VT_UI2, "message class (MQMSG_CLASS_*)")
PROPID_M_MSGID: Final = _m(2, _V.VT_VECTOR_UI1, "message identifier (20 bytes)")
PROPID_M_CORRELATIONID: Final = _m(3, _V.VT_VECTOR_UI1, "correlation identifier (20 bytes)")
PROPID_M_PRIORITY: Final = _m(4, _V.VT_UI1, "priority 0..7")
PROPID_M_DELIVERY: Final = _m(5, _V.VT_UI1, "MQMSG_DELIVERY_EXPRESS / _RECOVERABLE")
PROPID_M_ACKNOWLEDGE: Final = _m(6, _V.VT_UI1, "acknowledgments requested (MQMSG_ACKNOWLEDGMENT_*)")
PROPID_M_JOURNAL: Final = _m(
    7, _V.VT_UI1, "source journaling / dead-letter flags (MQMSG_JOURNAL, MQMSG_DEADLETTER)"
)
PROPID_M_APPSPECIFIC: Final = _m(8, _V.VT_UI4, "application-specific value")
PROPID_M_BODY: Final = _m(9, _V.VT_VECTOR_UI1, "message body")
PROPID_M_BODY_SIZE: Final = _m(10, _V.VT_UI4, "size of the body in bytes")
PROPID_M_LABEL: Final = _m(11, _V.VT_LPWSTR, "message label")
PROPID_M_LABEL_LEN: Final = _m(12, _V.VT_UI4, "label buffer length in characters")
PROPID_M_TIME_TO_REACH_QUEUE: Final = _m(13, _V.VT_UI4, "time-to-reach-queue in seconds")
PROPID_M_TIME_TO_BE_RECEIVED: Final = _m(14, _V.VT_UI4, "time-to-be-received in seconds")
PROPID_M_RESP_QUEUE: Final = _m(15, _V.VT_LPWSTR, "response queue format name")
PROPID_M_RESP_QUEUE_LEN: Final = _m(16, _V.VT_UI4, "response queue buffer length")
PROPID_M_ADMIN_QUEUE: Final = _m(17, _V.VT_LPWSTR, "administration queue format name")
PROPID_M_ADMIN_QUEUE_LEN: Final = _m(18, _V.VT_UI4, "administration queue buffer length")
PROPID_M_VERSION: Final = _m(19, _V.VT_UI4, "MSMQ version that sent the message")
PROPID_M_SENDERID: Final = _m(20, _V.VT_VECTOR_UI1, "sender identifier (SID)")
PROPID_M_SENDERID_LEN: Final = _m(21, _V.VT_UI4, "sender identifier buffer length")
PROPID_M_SENDERID_TYPE: Final = _m(22, _V.VT_UI4, "MQMSG_SENDERID_TYPE_NONE / _SID")
PROPID_M_PRIV_LEVEL: Final = _m(23, _V.VT_UI4, "privacy level (MQMSG_PRIV_LEVEL_*)")
PROPID_M_AUTH_LEVEL: Final = _m(24, _V.VT_UI4, "authentication level (MQMSG_AUTH_LEVEL_*)")
PROPID_M_AUTHENTICATED: Final = _m(25, _V.VT_UI1, "whether the message was authenticated")
PROPID_M_HASH_ALG: Final = _m(26, _V.VT_UI4, "hash algorithm (CALG_*)")
PROPID_M_ENCRYPTION_ALG: Final = _m(27, _V.VT_UI4, "encryption algorithm (CALG_*)")
PROPID_M_SENDER_CERT: Final = _m(28, _V.VT_VECTOR_UI1, "sender certificate")
PROPID_M_SENDER_CERT_LEN: Final = _m(29, _V.VT_UI4, "sender certificate buffer length")
PROPID_M_SRC_MACHINE_ID: Final = _m(30, _V.VT_CLSID, "GUID of the source queue manager")
PROPID_M_SENTTIME: Final = _m(31, _V.VT_UI4, "time sent, Unix seconds")
PROPID_M_ARRIVEDTIME: Final = _m(32, _V.VT_UI4, "time arrived, Unix seconds")
PROPID_M_DEST_QUEUE: Final = _m(33, _V.VT_LPWSTR, "destination queue format name")
PROPID_M_DEST_QUEUE_LEN: Final = _m(34, _V.VT_UI4, "destination queue buffer length")
PROPID_M_EXTENSION: Final = _m(35, _V.VT_VECTOR_UI1, "application-defined extension data")
PROPID_M_EXTENSION_LEN: Final = _m(36, _V.VT_UI4, "extension length in bytes")
PROPID_M_SECURITY_CONTEXT: Final = _m(37, _V.VT_UI4, "security context handle")
PROPID_M_CONNECTOR_TYPE: Final = _m(38, _V.VT_CLSID, "connector application GUID")
PROPID_M_XACT_STATUS_QUEUE: Final = _m(39, _V.VT_LPWSTR, "transaction status queue format name")
PROPID_M_XACT_STATUS_QUEUE_LEN: Final = _m(40, _V.VT_UI4, "transaction status queue buffer length")
PROPID_M_TRACE: Final = _m(41, _V.VT_UI1, "MQMSG_TRACE_NONE / MQMSG_SEND_ROUTE_TO_REPORT_QUEUE")
PROPID_M_BODY_TYPE: Final = _m(42, _V.VT_UI4, "VARTYPE of the body")
PROPID_M_DEST_SYMM_KEY: Final = _m(43, _V.VT_VECTOR_UI1, "symmetric key encrypted for the destination")
PROPID_M_DEST_SYMM_KEY_LEN: Final = _m(44, _V.VT_UI4, "symmetric key length")
PROPID_M_SIGNATURE: Final = _m(45, _V.VT_VECTOR_UI1, "message signature")
PROPID_M_SIGNATURE_LEN: Final = _m(46, _V.VT_UI4, "signature length")
PROPID_M_PROV_TYPE: Final = _m(47, _V.VT_UI4, "cryptographic provider type")
PROPID_M_PROV_NAME: Final = _m(48, _V.VT_LPWSTR, "cryptographic provider name")
PROPID_M_PROV_NAME_LEN: Final = _m(49, _V.VT_UI4, "provider name buffer length")
PROPID_M_FIRST_IN_XACT: Final = _m(50, _V.VT_UI1, "first message of its transaction")
PROPID_M_LAST_IN_XACT: Final = _m(51, _V.VT_UI1, "last message of its transaction")
PROPID_M_XACTID: Final = _m(52, _V.VT_VECTOR_UI1, "transaction identifier (20 bytes)")
PROPID_M_AUTHENTICATED_EX: Final = _m(53, _V.VT_UI1, "signature kind checked (MQMSG_AUTHENTICATED_SIG*)")
PROPID_M_RESP_FORMAT_NAME: Final = _m(54, _V.VT_LPWSTR, "response queue, any format name")
PROPID_M_RESP_FORMAT_NAME_LEN: Final = _m(55, _V.VT_UI4, "response format name buffer length")
PROPID_M_DEST_FORMAT_NAME: Final = _m(58, _V.VT_LPWSTR, "destination, any format name")
PROPID_M_DEST_FORMAT_NAME_LEN: Final = _m(59, _V.VT_UI4, "destination format name buffer length")
PROPID_M_LOOKUPID: Final = _m(60, _V.VT_UI8, "lookup identifier in the queue")
PROPID_M_SOAP_ENVELOPE: Final = _m(61, _V.VT_LPWSTR, "SRMP SOAP envelope")
PROPID_M_SOAP_ENVELOPE_LEN: Final = _m(62, _V.VT_UI4, "SOAP envelope buffer length")
PROPID_M_COMPOUND_MESSAGE: Final = _m(63, _V.VT_VECTOR_UI1, "whole SRMP compound message")
PROPID_M_COMPOUND_MESSAGE_SIZE: Final = _m(64, _V.VT_UI4, "compound message size")
PROPID_M_SOAP_HEADER: Final = _m(65, _V.VT_LPWSTR, "extra SOAP header elements to send")
PROPID_M_SOAP_BODY: Final = _m(66, _V.VT_LPWSTR, "extra SOAP body elements to send")
PROPID_M_DEADLETTER_QUEUE: Final = _m(67, _V.VT_LPWSTR, "application-specific dead-letter queue path")
PROPID_M_DEADLETTER_QUEUE_LEN: Final = _m(68, _V.VT_UI4, "dead-letter queue buffer length")
PROPID_M_ABORT_COUNT: Final = _m(69, _V.VT_UI4, "transactional receives aborted")
PROPID_M_MOVE_COUNT: Final = _m(70, _V.VT_UI4, "moves between queue and subqueues")
PROPID_M_GROUP_ID: Final = _m(71, _V.VT_LPWSTR, "group identifier (not in the public mq.h)")
PROPID_M_GROUP_ID_LEN: Final = _m(72, _V.VT_UI4, "group identifier buffer length (not in the public mq.h)")
PROPID_M_FIRST_IN_GROUP: Final = _m(73, _V.VT_UI1, "first message of its group (not in the public mq.h)")
PROPID_M_LAST_IN_GROUP: Final = _m(74, _V.VT_UI1, "last message of its group (not in the public mq.h)")
PROPID_M_LAST_MOVE_TIME: Final = _m(75, _V.VT_UI4, "time of the last move, Unix seconds")


_PREFIXES: Final = {
    PropFamily.QUEUE: "PROPID_Q_",
    PropFamily.MACHINE: "PROPID_QM_",
    PropFamily.SITE: "PROPID_S_",
    PropFamily.CONNECTED_NETWORK: "PROPID_CN_",
    PropFamily.ENTERPRISE: "PROPID_E_",
    PropFamily.USER: "PROPID_U_",
    PropFamily.ROUTING_LINK: "PROPID_L_",
    PropFamily.SETTINGS: "PROPID_SET_",
    PropFamily.MQUSER: "PROPID_MQU_",
    PropFamily.COMPUTER: "PROPID_COM_",
    PropFamily.MGMT_MACHINE: "PROPID_MGMT_MSMQ_",
    PropFamily.MGMT_QUEUE: "PROPID_MGMT_QUEUE_",
    PropFamily.DELETION_NOTIFICATION: "PROPID_D_",
    PropFamily.MESSAGE: "PROPID_M_",
}


def _build() -> tuple[PropId, ...]:
    namespace = globals()
    names = [name for name in namespace if name.startswith("PROPID_")]
    rows = [(family, row) for family, reg in _REGISTRARS.items() for row in reg.rows]
    # Definition order is family by family, in the same order as PropFamily.
    if len(names) != len(rows):  # pragma: no cover - a broken table is a programming error
        raise AssertionError("propids: constants and registered rows differ in number")
    out: list[PropId] = []
    index: dict[PropFamily, int] = {}
    for name, (family, (value, vartype, description)) in zip(names, rows, strict=True):
        if namespace[name] != value or not name.startswith(_PREFIXES[family]):  # pragma: no cover
            raise AssertionError(f"propids: {name} is out of order")
        index[family] = index.get(family, 0) + 1
        section = "" if family is PropFamily.MESSAGE else f"{family.value}.{index[family]}"
        out.append(PropId(name, value, vartype, family, description, section))
    return tuple(out)


ALL: Final[tuple[PropId, ...]] = _build()
"""Every property identifier, in definition order (spec order, then mq.h order)."""

BY_NAME: Final[Mapping[str, PropId]] = MappingProxyType({p.name: p for p in ALL})
BY_FAMILY: Final[Mapping[PropFamily, tuple[PropId, ...]]] = MappingProxyType(
    {family: tuple(p for p in ALL if p.family is family) for family in PropFamily}
)
BY_VALUE: Final[Mapping[PropFamily, Mapping[int, PropId]]] = MappingProxyType(
    {family: MappingProxyType({p.value: p for p in rows}) for family, rows in BY_FAMILY.items()}
)
DIRECTORY_FAMILIES: Final = frozenset(PropFamily) - {
    PropFamily.MGMT_MACHINE,
    PropFamily.MGMT_QUEUE,
    PropFamily.MESSAGE,
}
DIRECTORY_BY_VALUE: Final[Mapping[int, PropId]] = MappingProxyType(
    {p.value: p for p in ALL if p.family in DIRECTORY_FAMILIES}
)
MESSAGE_BY_VALUE: Final = BY_VALUE[PropFamily.MESSAGE]
MGMT_MACHINE_BY_VALUE: Final = BY_VALUE[PropFamily.MGMT_MACHINE]
MGMT_QUEUE_BY_VALUE: Final = BY_VALUE[PropFamily.MGMT_QUEUE]


def lookup(value: int, family: PropFamily) -> PropId | None:
    """The identifier ``value`` of ``family``, or ``None`` if the family has no such number."""
    return BY_VALUE[family].get(value)


def vartype_of(value: int, family: PropFamily) -> VarType | None:
    """The VARTYPE a PROPVARIANT for ``value`` of ``family`` MUST carry, or ``None`` if unknown."""
    prop = BY_VALUE[family].get(value)
    return None if prop is None else prop.vartype


__all__ = [  # the fixed names, then every PROPID_* constant in table order
    "ALL",
    "BY_FAMILY",
    "BY_NAME",
    "BY_VALUE",
    "DIRECTORY_BY_VALUE",
    "DIRECTORY_FAMILIES",
    "MESSAGE_BY_VALUE",
    "MGMT_MACHINE_BY_VALUE",
    "MGMT_QUEUE_BY_VALUE",
    "PropFamily",
    "PropId",
    "lookup",
    "vartype_of",
    *(p.name for p in ALL),
]
