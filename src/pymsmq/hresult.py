"""MSMQ HRESULT values: the complete table of [MS-MQMQ] 2.4 "Error Codes".

Generated from the spec table (9 informational and 136 error codes; the MSMQ facility is 0x0E).
Each member's description is the spec text, cut to its first sentence.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["DESCRIPTIONS", "HResult", "describe", "named"]


class HResult(IntEnum):
    """An MSMQ HRESULT ([MS-MQMQ] 2.4), as an unsigned 32-bit value."""

    S_OK = 0x00000000
    # [MS-ERREF] 2.1: E_NOTIMPL and friends are used where MC-MQAC says so.
    E_NOTIMPL = 0x80004001
    E_INVALIDARG = 0x80070057
    E_OUTOFMEMORY = 0x8007000E
    # [MS-ERREF] 2.3 NTSTATUS: [MS-MQDMPR] 3.1.7.1.17 Cancel Waiting Message Read Request answers it
    # for a read that is not waiting (pymsmq's CANCEL_RECEIVE).
    STATUS_NOT_FOUND = 0xC0000225
    MQ_INFORMATION_PROPERTY = 0x400E0001
    MQ_INFORMATION_ILLEGAL_PROPERTY = 0x400E0002
    MQ_INFORMATION_PROPERTY_IGNORED = 0x400E0003
    MQ_INFORMATION_UNSUPPORTED_PROPERTY = 0x400E0004
    MQ_INFORMATION_DUPLICATE_PROPERTY = 0x400E0005
    MQ_INFORMATION_OPERATION_PENDING = 0x400E0006
    MQ_INFORMATION_FORMATNAME_BUFFER_TOO_SMALL = 0x400E0009
    MQ_INFORMATION_INTERNAL_USER_CERT_EXIST = 0x400E000A
    MQ_INFORMATION_OWNER_IGNORED = 0x400E000B
    MQ_ERROR = 0xC00E0001
    MQ_ERROR_PROPERTY = 0xC00E0002
    MQ_ERROR_QUEUE_NOT_FOUND = 0xC00E0003
    MQ_ERROR_QUEUE_NOT_ACTIVE = 0xC00E0004
    MQ_ERROR_QUEUE_EXISTS = 0xC00E0005
    MQ_ERROR_INVALID_PARAMETER = 0xC00E0006
    MQ_ERROR_INVALID_HANDLE = 0xC00E0007
    MQ_ERROR_OPERATION_CANCELLED = 0xC00E0008
    MQ_ERROR_SHARING_VIOLATION = 0xC00E0009
    MQ_ERROR_SERVICE_NOT_AVAILABLE = 0xC00E000B
    MQ_ERROR_MACHINE_NOT_FOUND = 0xC00E000D
    MQ_ERROR_ILLEGAL_SORT = 0xC00E0010
    MQ_ERROR_ILLEGAL_USER = 0xC00E0011
    MQ_ERROR_NO_DS = 0xC00E0013
    MQ_ERROR_ILLEGAL_QUEUE_PATHNAME = 0xC00E0014
    MQ_ERROR_ILLEGAL_PROPERTY_VALUE = 0xC00E0018
    MQ_ERROR_ILLEGAL_PROPERTY_VT = 0xC00E0019
    MQ_ERROR_BUFFER_OVERFLOW = 0xC00E001A
    MQ_ERROR_IO_TIMEOUT = 0xC00E001B
    MQ_ERROR_ILLEGAL_CURSOR_ACTION = 0xC00E001C
    MQ_ERROR_MESSAGE_ALREADY_RECEIVED = 0xC00E001D
    MQ_ERROR_ILLEGAL_FORMATNAME = 0xC00E001E
    MQ_ERROR_FORMATNAME_BUFFER_TOO_SMALL = 0xC00E001F
    MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION = 0xC00E0020
    MQ_ERROR_ILLEGAL_SECURITY_DESCRIPTOR = 0xC00E0021
    MQ_ERROR_SENDERID_BUFFER_TOO_SMALL = 0xC00E0022
    MQ_ERROR_SECURITY_DESCRIPTOR_TOO_SMALL = 0xC00E0023
    MQ_ERROR_CANNOT_IMPERSONATE_CLIENT = 0xC00E0024
    MQ_ERROR_ACCESS_DENIED = 0xC00E0025
    MQ_ERROR_PRIVILEGE_NOT_HELD = 0xC00E0026
    MQ_ERROR_INSUFFICIENT_RESOURCES = 0xC00E0027
    MQ_ERROR_USER_BUFFER_TOO_SMALL = 0xC00E0028
    MQ_ERROR_MESSAGE_STORAGE_FAILED = 0xC00E002A
    MQ_ERROR_SENDER_CERT_BUFFER_TOO_SMALL = 0xC00E002B
    MQ_ERROR_INVALID_CERTIFICATE = 0xC00E002C
    MQ_ERROR_CORRUPTED_INTERNAL_CERTIFICATE = 0xC00E002D
    MQ_ERROR_INTERNAL_USER_CERT_EXIST = 0xC00E002E
    MQ_ERROR_NO_INTERNAL_USER_CERT = 0xC00E002F
    MQ_ERROR_CORRUPTED_SECURITY_DATA = 0xC00E0030
    MQ_ERROR_CORRUPTED_PERSONAL_CERT_STORE = 0xC00E0031
    MQ_ERROR_COMPUTER_DOES_NOT_SUPPORT_ENCRYPTION = 0xC00E0033
    MQ_ERROR_BAD_SECURITY_CONTEXT = 0xC00E0035
    MQ_ERROR_COULD_NOT_GET_USER_SID = 0xC00E0036
    MQ_ERROR_COULD_NOT_GET_ACCOUNT_INFO = 0xC00E0037
    MQ_ERROR_ILLEGAL_MQCOLUMNS = 0xC00E0038
    MQ_ERROR_ILLEGAL_PROPID = 0xC00E0039
    MQ_ERROR_ILLEGAL_RELATION = 0xC00E003A
    MQ_ERROR_ILLEGAL_PROPERTY_SIZE = 0xC00E003B
    MQ_ERROR_ILLEGAL_RESTRICTION_PROPID = 0xC00E003C
    MQ_ERROR_ILLEGAL_MQQUEUEPROPS = 0xC00E003D
    MQ_ERROR_PROPERTY_NOTALLOWED = 0xC00E003E
    MQ_ERROR_INSUFFICIENT_PROPERTIES = 0xC00E003F
    MQ_ERROR_MACHINE_EXISTS = 0xC00E0040
    MQ_ERROR_ILLEGAL_MQQMPROPS = 0xC00E0041
    MQ_ERROR_DS_IS_FULL = 0xC00E0042
    MQ_ERROR_DS_ERROR = 0xC00E0043
    MQ_ERROR_INVALID_OWNER = 0xC00E0044
    MQ_ERROR_UNSUPPORTED_ACCESS_MODE = 0xC00E0045
    MQ_ERROR_RESULT_BUFFER_TOO_SMALL = 0xC00E0046
    MQ_ERROR_DELETE_CN_IN_USE = 0xC00E0048
    MQ_ERROR_NO_RESPONSE_FROM_OBJECT_SERVER = 0xC00E0049
    MQ_ERROR_OBJECT_SERVER_NOT_AVAILABLE = 0xC00E004A
    MQ_ERROR_QUEUE_NOT_AVAILABLE = 0xC00E004B
    MQ_ERROR_DTC_CONNECT = 0xC00E004C
    MQ_ERROR_TRANSACTION_IMPORT = 0xC00E004E
    MQ_ERROR_TRANSACTION_USAGE = 0xC00E0050
    MQ_ERROR_TRANSACTION_SEQUENCE = 0xC00E0051
    MQ_ERROR_MISSING_CONNECTOR_TYPE = 0xC00E0055
    MQ_ERROR_STALE_HANDLE = 0xC00E0056
    MQ_ERROR_TRANSACTION_ENLIST = 0xC00E0058
    MQ_ERROR_QUEUE_DELETED = 0xC00E005A
    MQ_ERROR_ILLEGAL_CONTEXT = 0xC00E005B
    MQ_ERROR_ILLEGAL_SORT_PROPID = 0xC00E005C
    MQ_ERROR_LABEL_TOO_LONG = 0xC00E005D
    MQ_ERROR_LABEL_BUFFER_TOO_SMALL = 0xC00E005E
    MQ_ERROR_MQIS_SERVER_EMPTY = 0xC00E005F
    MQ_ERROR_MQIS_READONLY_MODE = 0xC00E0060
    MQ_ERROR_SYMM_KEY_BUFFER_TOO_SMALL = 0xC00E0061
    MQ_ERROR_SIGNATURE_BUFFER_TOO_SMALL = 0xC00E0062
    MQ_ERROR_PROV_NAME_BUFFER_TOO_SMALL = 0xC00E0063
    MQ_ERROR_ILLEGAL_OPERATION = 0xC00E0064
    MQ_ERROR_WRITE_NOT_ALLOWED = 0xC00E0065
    MQ_ERROR_WKS_CANT_SERVE_CLIENT = 0xC00E0066
    MQ_ERROR_DEPEND_WKS_LICENSE_OVERFLOW = 0xC00E0067
    MQ_CORRUPTED_QUEUE_WAS_DELETED = 0xC00E0068
    MQ_ERROR_REMOTE_MACHINE_NOT_AVAILABLE = 0xC00E0069
    MQ_ERROR_UNSUPPORTED_OPERATION = 0xC00E006A
    MQ_ERROR_ENCRYPTION_PROVIDER_NOT_SUPPORTED = 0xC00E006B
    MQ_ERROR_CANNOT_SET_CRYPTO_SEC_DESCR = 0xC00E006C
    MQ_ERROR_CERTIFICATE_NOT_PROVIDED = 0xC00E006D
    MQ_ERROR_Q_DNS_PROPERTY_NOT_SUPPORTED = 0xC00E006E
    MQ_ERROR_CANNOT_CREATE_CERT_STORE = 0xC00E006F
    MQ_ERROR_CANNOT_OPEN_CERT_STORE = 0xC00E0070
    MQ_ERROR_ILLEGAL_ENTERPRISE_OPERATION = 0xC00E0071
    MQ_ERROR_CANNOT_GRANT_ADD_GUID = 0xC00E0072
    MQ_ERROR_CANNOT_LOAD_MSMQOCM = 0xC00E0073
    MQ_ERROR_NO_ENTRY_POINT_MSMQOCM = 0xC00E0074
    MQ_ERROR_NO_MSMQ_SERVERS_ON_DC = 0xC00E0075
    MQ_ERROR_CANNOT_JOIN_DOMAIN = 0xC00E0076
    MQ_ERROR_CANNOT_CREATE_ON_GC = 0xC00E0077
    MQ_ERROR_GUID_NOT_MATCHING = 0xC00E0078
    MQ_ERROR_PUBLIC_KEY_NOT_FOUND = 0xC00E0079
    MQ_ERROR_PUBLIC_KEY_DOES_NOT_EXIST = 0xC00E007A
    MQ_ERROR_ILLEGAL_MQPRIVATEPROPS = 0xC00E007B
    MQ_ERROR_NO_GC_IN_DOMAIN = 0xC00E007C
    MQ_ERROR_NO_MSMQ_SERVERS_ON_GC = 0xC00E007D
    MQ_ERROR_CANNOT_GET_DN = 0xC00E007E
    MQ_ERROR_CANNOT_HASH_DATA_EX = 0xC00E007F
    MQ_ERROR_CANNOT_SIGN_DATA_EX = 0xC00E0080
    MQ_ERROR_CANNOT_CREATE_HASH_EX = 0xC00E0081
    MQ_ERROR_FAIL_VERIFY_SIGNATURE_EX = 0xC00E0082
    MQ_ERROR_CANNOT_DELETE_PSC_OBJECTS = 0xC00E0083
    MQ_ERROR_NO_MQUSER_OU = 0xC00E0084
    MQ_ERROR_CANNOT_LOAD_MQAD = 0xC00E0085
    MQ_ERROR_CANNOT_LOAD_MQDSSRV = 0xC00E0086
    MQ_ERROR_PROPERTIES_CONFLICT = 0xC00E0087
    MQ_ERROR_MESSAGE_NOT_FOUND = 0xC00E0088
    MQ_ERROR_CANT_RESOLVE_SITES = 0xC00E0089
    MQ_ERROR_NOT_SUPPORTED_BY_DEPENDENT_CLIENTS = 0xC00E008A
    MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER = 0xC00E008B
    MQ_ERROR_NOT_A_CORRECT_OBJECT_CLASS = 0xC00E008C
    MQ_ERROR_MULTI_SORT_KEYS = 0xC00E008D
    MQ_ERROR_GC_NEEDED = 0xC00E008E
    MQ_ERROR_DS_BIND_ROOT_FOREST = 0xC00E008F
    MQ_ERROR_DS_LOCAL_USER = 0xC00E0090
    MQ_ERROR_Q_ADS_PROPERTY_NOT_SUPPORTED = 0xC00E0091
    MQ_ERROR_BAD_XML_FORMAT = 0xC00E0092
    MQ_ERROR_UNSUPPORTED_CLASS = 0xC00E0093
    MQ_ERROR_UNINITIALIZED_OBJECT = 0xC00E0094
    MQ_ERROR_CANNOT_CREATE_PSC_OBJECTS = 0xC00E0095
    MQ_ERROR_CANNOT_UPDATE_PSC_OBJECTS = 0xC00E0096
    MQ_ERROR_RESOLVE_ADDRESS = 0xC00E0099
    MQ_ERROR_TOO_MANY_PROPERTIES = 0xC00E009A
    MQ_ERROR_MESSAGE_NOT_AUTHENTICATED = 0xC00E009B
    MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION = 0xC00E009C
    MQDS_UNKNOWN_SOURCE = 0xC00E0504


DESCRIPTIONS: dict[HResult, str] = {
    HResult.MQ_INFORMATION_PROPERTY: "One or more of the properties passed resulted in a warning, but the function completed",
    HResult.MQ_INFORMATION_ILLEGAL_PROPERTY: "The property ID is invalid",
    HResult.MQ_INFORMATION_PROPERTY_IGNORED: "The property specified was ignored for this operation",
    HResult.MQ_INFORMATION_UNSUPPORTED_PROPERTY: "The property specified is not supported and was ignored for this operation",
    HResult.MQ_INFORMATION_DUPLICATE_PROPERTY: "The property specified is already in the property identifier array. The duplicate was ignored for this operation",
    HResult.MQ_INFORMATION_OPERATION_PENDING: "An asynchronous operation is currently pending",
    HResult.MQ_INFORMATION_FORMATNAME_BUFFER_TOO_SMALL: "The format name buffer supplied was too small to hold the format name; however, the queue was created successfully",
    HResult.MQ_INFORMATION_INTERNAL_USER_CERT_EXIST: "An internal Message Queuing certificate already exists for this user",
    HResult.MQ_INFORMATION_OWNER_IGNORED: "The queue owner was not set during the processing of this call",
    HResult.MQ_ERROR: "Generic error code",
    HResult.MQ_ERROR_PROPERTY: "One or more of the properties passed are invalid",
    HResult.MQ_ERROR_QUEUE_NOT_FOUND: "The queue does not exist or you do not have sufficient permissions to perform the operation",
    HResult.MQ_ERROR_QUEUE_NOT_ACTIVE: "The queue is not open or might not exist",
    HResult.MQ_ERROR_QUEUE_EXISTS: "A queue with the same path name already exists",
    HResult.MQ_ERROR_INVALID_PARAMETER: "An invalid parameter was passed to a function",
    HResult.MQ_ERROR_INVALID_HANDLE: "An invalid handle was passed to a function",
    HResult.MQ_ERROR_OPERATION_CANCELLED: "The operation was canceled before it could be completed",
    HResult.MQ_ERROR_SHARING_VIOLATION: "There is a sharing violation. The queue is already open for exclusive retrieval",
    HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE: "The Message Queuing service is not available",
    HResult.MQ_ERROR_MACHINE_NOT_FOUND: "The computer specified cannot be found",
    HResult.MQ_ERROR_ILLEGAL_SORT: "The sort operation specified is invalid; for example, there are duplicate columns",
    HResult.MQ_ERROR_ILLEGAL_USER: "The user specified is not a valid user",
    HResult.MQ_ERROR_NO_DS: "A connection with Active Directory cannot be established. Verify that there are sufficient permissions to perform this operation",
    HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME: "The queue path name specified is invalid",
    HResult.MQ_ERROR_ILLEGAL_PROPERTY_VALUE: "The property value specified is invalid",
    HResult.MQ_ERROR_ILLEGAL_PROPERTY_VT: "The VARTYPE value specified is invalid",
    HResult.MQ_ERROR_BUFFER_OVERFLOW: "The buffer supplied for message property retrieval is too small",
    HResult.MQ_ERROR_IO_TIMEOUT: "The time specified to wait for the message elapsed",
    HResult.MQ_ERROR_ILLEGAL_CURSOR_ACTION: "The MQ_ACTION_PEEK_NEXT value specified cannot be used with the current cursor position",
    HResult.MQ_ERROR_MESSAGE_ALREADY_RECEIVED: "The message to which the cursor is currently pointing was removed from the queue by another process or by another call without the use of this cursor",
    HResult.MQ_ERROR_ILLEGAL_FORMATNAME: "The format name specified is invalid",
    HResult.MQ_ERROR_FORMATNAME_BUFFER_TOO_SMALL: "The format name buffer supplied to the API was too small to hold the format name",
    HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION: "Operations of the type requested (for example, deleting a queue using a direct format name) are not supported for the format name specified",
    HResult.MQ_ERROR_ILLEGAL_SECURITY_DESCRIPTOR: "The specified security descriptor is invalid",
    HResult.MQ_ERROR_SENDERID_BUFFER_TOO_SMALL: "The size of the buffer for the user ID property is too small",
    HResult.MQ_ERROR_SECURITY_DESCRIPTOR_TOO_SMALL: "The size of the buffer passed is too small",
    HResult.MQ_ERROR_CANNOT_IMPERSONATE_CLIENT: "The security credentials cannot be verified because the RPC server cannot impersonate the client application",
    HResult.MQ_ERROR_ACCESS_DENIED: "Access is denied",
    HResult.MQ_ERROR_PRIVILEGE_NOT_HELD: "The client does not have sufficient security privileges to perform the operation",
    HResult.MQ_ERROR_INSUFFICIENT_RESOURCES: "There are insufficient resources to perform this operation",
    HResult.MQ_ERROR_USER_BUFFER_TOO_SMALL: "The request failed because the user buffer is too small to hold the information returned",
    HResult.MQ_ERROR_MESSAGE_STORAGE_FAILED: "A recoverable or journal message could not be stored. The message was not sent",
    HResult.MQ_ERROR_SENDER_CERT_BUFFER_TOO_SMALL: "The buffer for the user certificate property is too small",
    HResult.MQ_ERROR_INVALID_CERTIFICATE: "The user certificate is invalid",
    HResult.MQ_ERROR_CORRUPTED_INTERNAL_CERTIFICATE: "The internal Message Queuing certificate is corrupted",
    HResult.MQ_ERROR_INTERNAL_USER_CERT_EXIST: "An internal Message Queuing certificate already exists for this user",
    HResult.MQ_ERROR_NO_INTERNAL_USER_CERT: "No internal Message Queuing certificate exists for the user",
    HResult.MQ_ERROR_CORRUPTED_SECURITY_DATA: "A cryptographic function failed",
    HResult.MQ_ERROR_CORRUPTED_PERSONAL_CERT_STORE: "The personal certificate store is corrupted",
    HResult.MQ_ERROR_COMPUTER_DOES_NOT_SUPPORT_ENCRYPTION: "The computer does not support encryption operations",
    HResult.MQ_ERROR_BAD_SECURITY_CONTEXT: "The security context is invalid",
    HResult.MQ_ERROR_COULD_NOT_GET_USER_SID: "The SID cannot be obtained from the thread token",
    HResult.MQ_ERROR_COULD_NOT_GET_ACCOUNT_INFO: "The account information for the user cannot be obtained",
    HResult.MQ_ERROR_ILLEGAL_MQCOLUMNS: "The MQCOLUMNS parameter is invalid",
    HResult.MQ_ERROR_ILLEGAL_PROPID: "A property identifier is invalid",
    HResult.MQ_ERROR_ILLEGAL_RELATION: "A relationship parameter is invalid",
    HResult.MQ_ERROR_ILLEGAL_PROPERTY_SIZE: "The size of the buffer for the message identifier or correlation identifier is invalid",
    HResult.MQ_ERROR_ILLEGAL_RESTRICTION_PROPID: "A property identifier specified in MQRESTRICTION is invalid",
    HResult.MQ_ERROR_ILLEGAL_MQQUEUEPROPS: "Either the pointer to the MQQUEUEPROPS structure has a null value or no properties are specified in it",
    HResult.MQ_ERROR_PROPERTY_NOTALLOWED: "The property identifier specified is invalid for the operation requested",
    HResult.MQ_ERROR_INSUFFICIENT_PROPERTIES: "Not all the properties required for the operation were specified for the input parameters",
    HResult.MQ_ERROR_MACHINE_EXISTS: "The MSMQ Configuration (msmq) object already exists in Active Directory",
    HResult.MQ_ERROR_ILLEGAL_MQQMPROPS: "Either the pointer to the MQQMPROPS structure has a null value, or no properties are specified in it",
    HResult.MQ_ERROR_DS_IS_FULL: "[MSMQ 1.0/2.0 only] Distinguished name (DN) (DS) is full",
    HResult.MQ_ERROR_DS_ERROR: "There is an internal Active Directory error",
    HResult.MQ_ERROR_INVALID_OWNER: "The object owner is invalid",
    HResult.MQ_ERROR_UNSUPPORTED_ACCESS_MODE: "The access mode specified is unsupported",
    HResult.MQ_ERROR_RESULT_BUFFER_TOO_SMALL: "The result buffer specified is too small",
    HResult.MQ_ERROR_DELETE_CN_IN_USE: "[MSMQ 1.0/2.0 only] The connected network cannot be deleted; it is in use",
    HResult.MQ_ERROR_NO_RESPONSE_FROM_OBJECT_SERVER: "There was no response from the object owner",
    HResult.MQ_ERROR_OBJECT_SERVER_NOT_AVAILABLE: "The object owner is not available",
    HResult.MQ_ERROR_QUEUE_NOT_AVAILABLE: "An error occurred while reading from a queue located on a remote computer",
    HResult.MQ_ERROR_DTC_CONNECT: "A connection cannot be established with the Distributed Transaction Coordinator",
    HResult.MQ_ERROR_TRANSACTION_IMPORT: "The transaction specified cannot be imported",
    HResult.MQ_ERROR_TRANSACTION_USAGE: "An attempted action cannot be performed within a transaction",
    HResult.MQ_ERROR_TRANSACTION_SEQUENCE: "The transaction's operation sequence is incorrect",
    HResult.MQ_ERROR_MISSING_CONNECTOR_TYPE: "The connector type message property is not specified. This property is required for sending an acknowledgment message or a secure message",
    HResult.MQ_ERROR_STALE_HANDLE: "The Message Queuing service was restarted. Any open queue handles have to be closed",
    HResult.MQ_ERROR_TRANSACTION_ENLIST: "The transaction specified cannot be enlisted",
    HResult.MQ_ERROR_QUEUE_DELETED: "The queue was deleted. Messages cannot be received anymore using this queue handle. The handle has to be closed",
    HResult.MQ_ERROR_ILLEGAL_CONTEXT: "The context parameter is invalid",
    HResult.MQ_ERROR_ILLEGAL_SORT_PROPID: "An invalid property identifier is specified in MQSORTSET",
    HResult.MQ_ERROR_LABEL_TOO_LONG: "The message label is too long. Its length MUST be less than or equal to MQ_MAX_MSG_LABEL_LEN",
    HResult.MQ_ERROR_LABEL_BUFFER_TOO_SMALL: "The label buffer supplied to the API is too small",
    HResult.MQ_ERROR_MQIS_SERVER_EMPTY: "[MSMQ 1.0/2.0 only] The list of MQIS servers (in the registry) is empty",
    HResult.MQ_ERROR_MQIS_READONLY_MODE: "[MSMQ 1.0/2.0 only] The MQIS database is in read-only mode",
    HResult.MQ_ERROR_SYMM_KEY_BUFFER_TOO_SMALL: "The buffer passed for the symmetric key is too small",
    HResult.MQ_ERROR_SIGNATURE_BUFFER_TOO_SMALL: "The buffer passed for the signature property is too small",
    HResult.MQ_ERROR_PROV_NAME_BUFFER_TOO_SMALL: "The buffer passed for the provider name property is too small",
    HResult.MQ_ERROR_ILLEGAL_OPERATION: "The operation is invalid for a foreign Message Queuing system",
    HResult.MQ_ERROR_WRITE_NOT_ALLOWED: "Another MQIS server is being installed. Write operations to the database are not allowed at this stage",
    HResult.MQ_ERROR_WKS_CANT_SERVE_CLIENT: "The MSMQ service cannot be a supporting server. A Message Queuing supporting server is required",
    HResult.MQ_ERROR_DEPEND_WKS_LICENSE_OVERFLOW: "The supporting server has reached its limit for accepting application connections",
    HResult.MQ_CORRUPTED_QUEUE_WAS_DELETED: "The corresponding file for the designated queue in the Lqs folder was deleted because it was corrupted",
    HResult.MQ_ERROR_REMOTE_MACHINE_NOT_AVAILABLE: "The remote computer is not available",
    HResult.MQ_ERROR_UNSUPPORTED_OPERATION: "This operation is not supported for Message Queuing installed in workgroup mode",
    HResult.MQ_ERROR_ENCRYPTION_PROVIDER_NOT_SUPPORTED: "The requested cryptographic service provider is not supported by Message Queuing",
    HResult.MQ_ERROR_CANNOT_SET_CRYPTO_SEC_DESCR: "The security descriptors for the cryptographic keys cannot be set",
    HResult.MQ_ERROR_CERTIFICATE_NOT_PROVIDED: "A user attempted to send an authenticated message without a certificate",
    HResult.MQ_ERROR_Q_DNS_PROPERTY_NOT_SUPPORTED: "The column PROPID_Q_PATHNAME_DNS is not supported for the API",
    HResult.MQ_ERROR_CANNOT_CREATE_CERT_STORE: "A certificate store cannot be created for the internal certificate",
    HResult.MQ_ERROR_CANNOT_OPEN_CERT_STORE: "The certificate store for the internal certificate cannot be opened",
    HResult.MQ_ERROR_ILLEGAL_ENTERPRISE_OPERATION: "This operation is invalid for an MsmqServices object",
    HResult.MQ_ERROR_CANNOT_GRANT_ADD_GUID: "The Add GUID permission cannot be granted to the current user",
    HResult.MQ_ERROR_CANNOT_LOAD_MSMQOCM: "[MSMQ 1.0/2.0 only] The dynamic-link library Msmqocm.dll cannot be loaded",
    HResult.MQ_ERROR_NO_ENTRY_POINT_MSMQOCM: "An entry point cannot be located in Msmqocm.dll",
    HResult.MQ_ERROR_NO_MSMQ_SERVERS_ON_DC: "Message Queuing servers cannot be found on domain controllers",
    HResult.MQ_ERROR_CANNOT_JOIN_DOMAIN: "The computer joined the domain, but Message Queuing will continue to run in workgroup mode because it failed to register itself in Active Directory",
    HResult.MQ_ERROR_CANNOT_CREATE_ON_GC: "The object was not created on the Global Catalog server specified",
    HResult.MQ_ERROR_GUID_NOT_MATCHING: "[MSMQ 1.0/2.0 only] Failed to create an msmqConfiguration object with a GUID that matches the computer installation. MSMQ must be uninstalled and then reinstalled",
    HResult.MQ_ERROR_PUBLIC_KEY_NOT_FOUND: "The public key for the designated computer cannot be found",
    HResult.MQ_ERROR_PUBLIC_KEY_DOES_NOT_EXIST: "The public key for the designated computer does not exist",
    HResult.MQ_ERROR_ILLEGAL_MQPRIVATEPROPS: "The parameters in MQPRIVATEPROPS are invalid. Either the pointer to the MQPRIVATEPROPS structure has a null value or no properties are specified in it",
    HResult.MQ_ERROR_NO_GC_IN_DOMAIN: "Global Catalog servers cannot be found in the domain specified",
    HResult.MQ_ERROR_NO_MSMQ_SERVERS_ON_GC: "No Message Queuing servers were found on Global Catalog servers",
    HResult.MQ_ERROR_CANNOT_GET_DN: "[MSMQ 1.0/2.0 only] Failed to retrieve the distinguished name (DN) of the local computer",
    HResult.MQ_ERROR_CANNOT_HASH_DATA_EX: "Data for an authenticated message cannot be hashed",
    HResult.MQ_ERROR_CANNOT_SIGN_DATA_EX: "Data cannot be signed before sending an authenticated message",
    HResult.MQ_ERROR_CANNOT_CREATE_HASH_EX: "A hash object cannot be created for an authenticated message",
    HResult.MQ_ERROR_FAIL_VERIFY_SIGNATURE_EX: "The signature of the message received is not valid",
    HResult.MQ_ERROR_CANNOT_DELETE_PSC_OBJECTS: "The delete operation against the designated object failed because the object is owned by a PSC. The operation cannot be performed",
    HResult.MQ_ERROR_NO_MQUSER_OU: "There is no MSMQ Users organizational unit object in Active Directory for the domain. Please create one manually",
    HResult.MQ_ERROR_CANNOT_LOAD_MQAD: "The dynamic-link library Mqad.dll cannot be loaded",
    HResult.MQ_ERROR_CANNOT_LOAD_MQDSSRV: "Obsolete: not used in any version of MSMQ",
    HResult.MQ_ERROR_PROPERTIES_CONFLICT: "Two or more of the properties passed cannot coexist",
    HResult.MQ_ERROR_MESSAGE_NOT_FOUND: "The message does not exist or was removed from the queue",
    HResult.MQ_ERROR_CANT_RESOLVE_SITES: "The sites in which the computer resides cannot be resolved",
    HResult.MQ_ERROR_NOT_SUPPORTED_BY_DEPENDENT_CLIENTS: "This operation is not supported for communicating with a supporting server",
    HResult.MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER: "This operation is not supported by the remote Message Queuing service",
    HResult.MQ_ERROR_NOT_A_CORRECT_OBJECT_CLASS: "The object for which properties were requested from Active Directory does not belong to the class requested",
    HResult.MQ_ERROR_MULTI_SORT_KEYS: "The value of cCol in MQSORTSET cannot be greater than 1. Active Directory supports only a single sort key",
    HResult.MQ_ERROR_GC_NEEDED: "An MSMQ Configuration (msmq) object with the GUID supplied cannot be created",
    HResult.MQ_ERROR_DS_BIND_ROOT_FOREST: "Binding to the forest root failed. This error usually indicates a problem in the DNS configuration",
    HResult.MQ_ERROR_DS_LOCAL_USER: "A local user is authenticated as an anonymous user and cannot access Active Directory. The local user must log on as a domain user to access Active Directory",
    HResult.MQ_ERROR_Q_ADS_PROPERTY_NOT_SUPPORTED: "The column PROPID_Q_ADS_PATH is not supported for the API",
    HResult.MQ_ERROR_BAD_XML_FORMAT: "The given property is not a valid XML document",
    HResult.MQ_ERROR_UNSUPPORTED_CLASS: "The Active Directory object specified is not an instance of a supported class",
    HResult.MQ_ERROR_UNINITIALIZED_OBJECT: "The MSMQManagement object must be initialized before it is used",
    HResult.MQ_ERROR_CANNOT_CREATE_PSC_OBJECTS: "The create object operation cannot be performed because the object must be owned by a PSC",
    HResult.MQ_ERROR_CANNOT_UPDATE_PSC_OBJECTS: "The update operation cannot be performed because the designated object is owned by a PSC",
    HResult.MQ_ERROR_RESOLVE_ADDRESS: "Message Queuing is not able to resolve the address specified by the user. The address might be wrong, or the DNS lookup for the address failed",
    HResult.MQ_ERROR_TOO_MANY_PROPERTIES: "Too many properties passed to the function. Message Queuing can process up to 128 properties in one call",
    HResult.MQ_ERROR_MESSAGE_NOT_AUTHENTICATED: "The queue only accepts authenticated messages",
    HResult.MQ_ERROR_MESSAGE_LOCKED_UNDER_TRANSACTION: "The message is currently being processed under a transaction. Until the transaction outcome is determined, the message cannot be processed in any other transaction",
    HResult.MQDS_UNKNOWN_SOURCE: "The specified MSMQ Directory Service server in the directory change is unknown",
}


def describe(hresult: int) -> str:
    """Return ``NAME (0xXXXXXXXX): description`` for a known HRESULT, or the hex value alone."""
    try:
        member = HResult(hresult & 0xFFFFFFFF)
    except ValueError:
        return f"0x{hresult & 0xFFFFFFFF:08X}"
    text = DESCRIPTIONS.get(member)
    head = f"{member.name} (0x{int(member):08X})"
    return f"{head}: {text}" if text else head


def named(hresult: int) -> int:
    """``hresult`` as an unsigned 32-bit value: the ``HResult`` member when MSMQ names it
    (``.name`` works), else the plain int."""
    value = int(hresult) & 0xFFFFFFFF
    member = HResult._value2member_map_.get(value)
    return value if member is None else member  # type: ignore[return-value]
