"""``RemoteQueue``: an open queue on a pymsmq server, the methods of ``pymsmq.Queue`` over the wire.

Split out of ``pymsmq.client.remote`` (which re-exports it).  Each call is one or two requests of
docs/protocol.md; ``send``/``receive`` take the one-request-in-flight fast lane of the transport.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from pymsmq.client import many
from pymsmq.client.remote_cursor import RemoteCursor
from pymsmq.client.remote_notification import RemoteNotification, enable_notification
from pymsmq.client.remote_transaction import RemoteTransaction, _receive_xact, _xact
from pymsmq.client.transport import NOT_SENT, Pending, error_from, send_refused
from pymsmq.errors import MSMQError
from pymsmq.hresult import HResult
from pymsmq.model.constants import MQ_PEEK_ACCESS, MQ_RECEIVE_ACCESS
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.names import several_queues, validate_subqueue_name
from pymsmq.model.packet_mapping import check_reply_queue_sizes
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.model.timeouts import timeout_ms
from pymsmq.protocol import Action, ErrorResponse, TransactionRef, hot
from pymsmq.protocol import messages as pm
from pymsmq.protocol.codes import RR_ACK, Op, ReceiveFlags
from pymsmq.protocol.fast_packet import encode_plain, encode_simple
from pymsmq.protocol.handshake import OP_SINCE_VERSION
from pymsmq.protocol.message_codec import (
    CLIENT_RECEIVE_PROPIDS,
    PROPID_M_MSGID,
    PROPID_M_SENTTIME,
    decode_message,
    encode_packet,
    is_held,
    parse_receive_answer,
    parse_send_answer,
    props_dict,
)

if TYPE_CHECKING:
    from pymsmq.client.remote import RemoteQueueManager

__all__ = ["RemoteQueue"]

_A = Action
#: Held while a handle's own cursor is made (once per handle).
_MAKING_CURSOR: Final = threading.Lock()
_RECEIVE_ACTION: Final = int(Action.MQ_ACTION_RECEIVE)
_SEND_OP: Final = int(Op.SEND)
_RECEIVE_OP: Final = int(Op.RECEIVE)
_MISSING: Final = object()
#: Two-phase receives outside a transaction ([MS-MQRR] 3.1.4.9; docs/protocol.md, END_RECEIVE).
_CONFIRM: Final = int(ReceiveFlags.CONFIRM)
_PEEKS: Final = frozenset(int(a) for a in Action if a.peek)
#: RECEIVE_MATCHING.match for correlation ids ([MS-MQMQ] 2.2.18.1.4 PROPID_M_CORRELATIONID).
PROPID_M_CORRELATIONID: Final = 3
#: The protocol version that has RECEIVE_MATCHING.
_MATCHING_VERSION: Final = OP_SINCE_VERSION[Op.RECEIVE_MATCHING]
#: The protocol version that has MARK_REJECTED.
_REJECT_VERSION: Final = OP_SINCE_VERSION[Op.MARK_REJECTED]
_NO_MESSAGE: Final = frozenset({HResult.MQ_ERROR_IO_TIMEOUT, HResult.MQ_ERROR_MESSAGE_NOT_FOUND})


def _check_lookup_id(lookup_id: object) -> int:
    # [MC-MQAC] 3.11.4.1: LookupId 0 is rejected before any other check (as the embedded queue does).
    if isinstance(lookup_id, str) and lookup_id.isdigit():
        lookup_id = int(lookup_id)
    if not isinstance(lookup_id, int) or isinstance(lookup_id, bool) or not 0 < lookup_id < 1 << 64:
        raise MSMQError(f"invalid lookup id {lookup_id!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
    return lookup_id


class RemoteQueue:
    """An open queue on the server: the methods of ``pymsmq.Queue``."""

    #: RECEIVE_MANY messages asked per request: what one answer held when the frame limit cut it.
    _many_chunk = many.FIRST_CHUNK

    def __init__(
        self,
        qm: RemoteQueueManager,
        handle: int,
        format_name: str,
        props: QueueProperties,
        access: int,
        share: int,
        subqueue: str | None,
    ) -> None:
        self._qm = qm
        self._t = qm._t
        self._handle = handle
        self._format_name = format_name
        #: The multiple-element name the handle sends to (a copy to each queue), else None.
        self._sent_set = format_name if "," in format_name else None
        self._path = props.path_name
        self._transactional = props.transactional
        #: The queue's GUID when opened: a queue deleted and created again under the same name (and
        #: so the same format name) has another.
        self._queue_guid = props.queue_guid
        self._access = access
        self._share = share
        self._subqueue = subqueue
        self._closed = False
        self._cursor: RemoteCursor | None = None
        #: The RECEIVE payload of the last ``receive``: (timeout as given, timeout ms, transaction,
        #: payload, its abandonment handler (``_give_back``)), one tuple replaced whole, so that
        #: threads sharing the handle each send a payload of their own arguments (outside QA: the
        #: fields were set one by one, and a receive ran with another thread's timeout or
        #: transaction).
        self._receive_cache: tuple[object, int, TransactionRef, bytes, many.GiveBack | None] = (
            _MISSING,
            -1,
            None,
            b"",
            None,
        )
        #: ``_give_back(waits)``'s handlers, made on first use (index: waits).
        self._give_back_handlers: list[many.GiveBack | None] = [None, None]
        #: The notifications armed on this handle and not fired yet (closing it cancels them).
        self._armed: set[RemoteNotification] = set()

    def __repr__(self) -> str:
        return f"<RemoteQueue {self._format_name}{' closed' if self._closed else ''}>"

    # ------------------------------------------------------------------ description
    @property
    def format_name(self) -> str:
        """The queue's format name."""
        return self._format_name

    @property
    def path_name(self) -> str:
        """The queue's path name (``;subqueue`` for a subqueue handle)."""
        return f"{self._path};{self._subqueue}" if self._subqueue else self._path

    @property
    def properties(self) -> QueueProperties:
        """The queue's current properties (asked from the server); MQ_ERROR_QUEUE_DELETED once the
        queue this handle opened is gone (even if another of that name was created since)."""
        self._one_queue("reading queue properties")
        return self._current_properties()

    def _one_queue(self, what: str) -> None:
        # A handle on a multiple-element name refuses ``what`` here, as the embedded one does (the
        # server would be asked about the list as a queue name).
        if self._sent_set is not None:
            self._check()
            raise several_queues(self._sent_set, what)

    def _current_properties(self) -> QueueProperties:
        try:
            props = self._qm.get_queue_properties(self._format_name)
        except MSMQError as exc:
            if exc.hresult != HResult.MQ_ERROR_QUEUE_NOT_FOUND:
                raise
            props = None
        if props is None or props.queue_guid != self._queue_guid:
            raise MSMQError("the queue was deleted", HResult.MQ_ERROR_QUEUE_DELETED)
        return props

    @property
    def label(self) -> str:
        """PROPID_Q_LABEL."""
        return self.properties.label

    @property
    def transactional(self) -> bool:
        """PROPID_Q_TRANSACTION."""
        return self._transactional

    @property
    def subqueue_name(self) -> str | None:
        """The subqueue this handle reads, or None."""
        return self._subqueue

    @property
    def access(self) -> int:
        """The MQ_*_ACCESS bits of this handle."""
        return self._access

    @property
    def share_mode(self) -> int:
        """MQ_DENY_NONE (0) or MQ_DENY_RECEIVE_SHARE (1)."""
        return self._share

    @property
    def is_open(self) -> bool:
        """False after ``close`` or once the queue is deleted."""
        if self._closed:
            return False
        if self._sent_set is not None:  # (no one queue to ask about)
            return True
        try:
            self._current_properties()
        except MSMQError as exc:
            if exc.hresult == HResult.MQ_ERROR_QUEUE_DELETED:
                return False
            raise
        return True

    def _stats(self, *propids: int) -> dict[int, Any]:
        self._check()
        response = self._t.call(pm.StatsRequest(self._format_name, propids))
        return props_dict(response.properties)

    @property
    def message_count(self) -> int:
        """Messages in this queue (or subqueue), locked ones included."""
        self._one_queue("counting messages")
        self._current_properties()  # MQ_ERROR_QUEUE_DELETED for a queue deleted (or created again)
        return int(self._stats(7).get(7, 0))

    def __len__(self) -> int:
        return self.message_count

    @property
    def journal(self) -> RemoteQueue:
        """A handle on this queue's journal queue."""
        self._one_queue("opening a journal")
        self._check()
        fmt = self._format_name.upper()
        if self._subqueue or fmt.startswith("MACHINE=") or fmt.endswith(";JOURNAL"):
            raise MSMQError("this queue has no journal", HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION)
        return self._qm.queue(self._format_name + ";JOURNAL")

    def subqueue(self, name: str) -> RemoteQueue:
        """A handle on subqueue ``name`` of this queue."""
        self._one_queue("opening a subqueue")
        self._check()
        fmt = self._format_name.upper()
        if fmt.startswith("MACHINE=") or fmt.endswith(";JOURNAL"):
            raise MSMQError(
                "system and journal queues have no subqueues", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
            )
        return self._qm.queue(f"{self._path};{validate_subqueue_name(name)}")

    @property
    def subqueue_names(self) -> list[str]:
        """Names of the subqueues that hold messages."""
        self._one_queue("listing subqueues")
        return sorted(self._stats(27).get(27, ()))

    @property
    def subqueue_count(self) -> int:
        """Number of subqueues that hold messages."""
        return len(self.subqueue_names)

    def close(self) -> None:
        """Close the handle (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for n in list(self._armed):  # cancelled silently, as the embedded queue's
            n._finish()
        if not self._t.closed:
            try:
                self._t.call(pm.CloseQueueRequest(self._handle))
            except MSMQError:
                pass

    def __del__(self) -> None:
        # A handle dropped without ``close`` is closed on the server, as the embedded queue manager
        # forgets a dropped ``Queue`` (its handles are weak references): a dropped handle opened
        # with MQ_DENY_RECEIVE_SHARE does not lock the queue until the connection ends.  The
        # CLOSE_QUEUE goes out with the connection's next request (no I/O here: this may run in
        # the garbage collector, in any thread).
        if not getattr(self, "_closed", True):
            self._t.dropped_requests.append(pm.CloseQueueRequest(self._handle))

    def __enter__(self) -> RemoteQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _need_version(self, version: int, what: str) -> None:
        # An op of a later protocol version: refused here rather than sent to a server that chose
        # an earlier one (it would close the connection for an unknown op).
        hello = self._t.server_hello
        if hello is not None and hello.version < version:
            raise MSMQError(
                f"the server speaks protocol version {hello.version}; {what} version {version}"
                " (a newer pymsmq serve)",
                HResult.MQ_ERROR_OPERATION_NOT_SUPPORTED_BY_REMOTE_COMPUTER,
            )

    def _check(self) -> None:
        if self._closed:
            raise MSMQError("the queue handle is closed", HResult.MQ_ERROR_INVALID_HANDLE)

    # ------------------------------------------------------------------ send
    def _send_request(self, message: Message, transaction: object) -> pm.SendRequest:
        if not isinstance(message, Message):
            raise MSMQError("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
        message.validate()
        if message.admin_queue is not None or message.response_queue is not None:
            check_reply_queue_sizes(message)
        xact = _xact(self._qm, transaction)
        self._check()
        return hot.send_request(self._handle, encode_packet(message), xact)

    def _apply_sent(self, message: Message, response: pm.SendResponse) -> None:
        values = props_dict(response.properties)
        msgid = values.get(PROPID_M_MSGID)
        if isinstance(msgid, bytes) and len(msgid) == 20:
            message.id = ObjectId.from_bytes(msgid)
        sent = values.get(PROPID_M_SENTTIME)
        if isinstance(sent, int):
            message.sent_time = float(sent)
        message.source_machine_guid = self._qm.guid
        message.destination_queue = self._format_name
        if self._sent_set is not None or message.destination_format_name is not None:
            self._sent_to_set(message)

    def _sent_to_set(self, message: Message) -> None:
        # What a send sets beside destination_queue (as Queue._enqueue, MultipleDestination.send):
        # the multiple-element name a message went to, and no one queue then; None otherwise.
        if self._sent_set is not None:
            message.destination_queue = None
        message.destination_format_name = self._sent_set

    def _sent(self, message: Message) -> Any:
        return lambda response: self._apply_sent(message, response)

    def send(self, message: Message, transaction: RemoteTransaction | int | None = None) -> None:
        """Send ``message``; sets ``id``, ``sent_time``, ``source_machine_guid``, ``destination_queue``."""
        if not isinstance(message, Message):
            raise MSMQError("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
        message.validate()
        if message.admin_queue is not None or message.response_queue is not None:
            check_reply_queue_sizes(message)
        xact = None if transaction is None else _xact(self._qm, transaction)
        if self._closed:
            self._check()
        # encode_packet(message): the plain, then the simple shape first (a SEND packet never has a
        # destination; encode_plain gives encode_simple's bytes for the plain shape)
        packet = encode_plain(message) or encode_simple(message) or encode_packet(message)
        t = self._t
        # Fast lane: the payload bytes straight into a frame, the answer's facts in one unpack.
        response = t.roundtrip(_SEND_OP, hot.send_request_body(self._handle, packet, xact), parse_send_answer)
        if response is NOT_SENT:
            response = t.wait(t.send(hot.send_request(self._handle, packet, xact)))
        if type(response) is tuple:
            message.id = self._qm._object_id(response[0])
            message.sent_time = float(response[1])
            message.source_machine_guid = self._qm.guid
            message.destination_queue = self._format_name
            if self._sent_set is not None or message.destination_format_name is not None:
                self._sent_to_set(message)
            return
        if type(response) is ErrorResponse:
            raise send_refused(message, response)
        self._apply_sent(message, response)  # type: ignore[arg-type]

    def send_async(
        self, message: Message, transaction: RemoteTransaction | int | None = None
    ) -> Pending[None]:
        """Write the SEND now; ``.result()`` waits for its answer."""
        return self._t.submit(self._send_request(message, transaction), self._sent(message))

    def send_many(
        self, messages: Iterable[Message], transaction: RemoteTransaction | int | None = None
    ) -> None:
        """Send many messages in SEND_MANY batches (many per frame, frames pipelined).

        Every message's properties are validated first (an invalid one raises before anything is
        sent); then every valid message is sent (one refused at its send, e.g. for a queue name
        that is not a format name, does not stop the others), each gets ``id``, ``sent_time``, ...
        as with ``send``, and the first error is raised after all were answered (as the embedded
        ``Queue.send_many``), its ``failures`` listing every message not sent as (index in the
        batch, error); the others were sent.  A message the UserMessage packet cannot hold
        (MQ_ERROR_ILLEGAL_PROPERTY_VALUE, or over 4 MB: MQ_ERROR_INSUFFICIENT_RESOURCES, from the
        encoder) is one that fails: the others are sent.
        A frame the connection refuses (over a server's frame limit, a lost connection) stops the
        batch there: the frames already written are answered, then that error is raised.
        """
        batch = list(messages)
        resent: list[Message] = []  # received copies of a message sent to several queues
        try:
            for m in batch:
                if not isinstance(m, Message):
                    raise MSMQError("send needs a Message", HResult.MQ_ERROR_INVALID_PARAMETER)
                m.validate()
                if m.destination_format_name is not None:
                    resent.append(m)
            xact = _xact(self._qm, transaction)
            self._check()
        except MSMQError as exc:  # nothing sent: every message failed (as embedded)
            raise exc.with_failures((i, exc) for i in range(len(batch))) from None
        # Whose destination fields a send sets beyond destination_queue (``_sent_to_set``).
        settled = batch if self._sent_set is not None else resent
        if not settled:
            many.send_batches(self._t, self._handle, xact, batch, self._qm.guid, self._format_name)
            return
        try:
            many.send_batches(self._t, self._handle, xact, batch, self._qm.guid, self._format_name)
        finally:
            for m in settled:  # those sent (their destination_queue set): as ``send`` leaves them
                if m.destination_queue == self._format_name:
                    self._sent_to_set(m)

    # ------------------------------------------------------------------ receive family
    def _read(
        self,
        action: int,
        timeout: float | None = 0,
        transaction: object = None,
        cursor: int = 0,
        lookup_id: int = 0,
    ) -> Pending[Message]:
        ms = timeout_ms(timeout)
        xact = _receive_xact(self._qm, transaction)
        self._check()
        flags = _CONFIRM if xact is None and action not in _PEEKS else 0
        request = hot.receive_request(
            self._handle, action, ms, cursor, lookup_id, xact, CLIENT_RECEIVE_PROPIDS, flags
        )
        fmt = self._format_name

        def convert(response: pm.ReceiveResponse) -> Message:
            m = self._received(response)
            m.destination_queue = m.destination_queue or fmt
            return m

        # ``Pending.take`` (the synchronous reads): an answer abandoned by an interrupt gives back
        # the message it holds, and a read still waiting on the server is cancelled.
        return self._t.submit(request, convert, self._give_back(ms != 0) if flags or ms else None)

    def enable_notification(
        self,
        on_arrived: Callable[[RemoteQueue, int], object],
        cursor: int = 0,
        timeout: float | None = None,
        on_error: Callable[[RemoteQueue, int, int], object] | None = None,
    ) -> RemoteNotification:
        """Arm ONE arrival notification ([MC-MQAC] 3.11.4.1.9 EnableNotification), as
        ``pymsmq.Queue.enable_notification``: later exactly one of ``on_arrived(queue, cursor)`` or
        ``on_error(queue, hresult, cursor)`` is called (on a thread of this client, one callback
        of the connection at a time); arm again for the next message.  ``cursor``: MQMSG_FIRST
        (head), MQMSG_CURRENT or MQMSG_NEXT (this handle's cursor).  ``timeout`` in seconds (None =
        wait forever; 0 = error at once if nothing is there).  Returns a notification whose
        ``cancel()`` disarms it (``pymsmq.client.remote_notification``)."""
        return enable_notification(self, on_arrived, cursor, timeout, on_error)

    def _give_back(self, waits: bool = False) -> many.GiveBack:
        """``Transport.abandon``'s handler for this handle's reads (``many.GiveBack``)."""
        handler = self._give_back_handlers[waits]
        if handler is None:
            handler = self._give_back_handlers[waits] = many.GiveBack(self._t, self._handle, waits)
        return handler

    def receive(
        self, timeout: float | None = None, transaction: RemoteTransaction | int | None = None
    ) -> Message:
        """Remove and return the first message (``timeout`` seconds; None = forever)."""
        # Fast lane: a cached payload for this (timeout, transaction), the answer decoded in one go.
        cache = self._receive_cache
        ms = cache[1] if timeout is cache[0] else timeout_ms(timeout)
        xact = None if transaction is None else _receive_xact(self._qm, transaction)
        if self._closed:
            self._check()
        t = self._t
        flags = _CONFIRM if xact is None else 0
        if ms != cache[1] or xact != cache[2] or not cache[3]:
            body = hot.receive_request_body(
                self._handle, _RECEIVE_ACTION, ms, 0, 0, xact, CLIENT_RECEIVE_PROPIDS, flags
            )
            # Interrupted while waiting, the answer is abandoned: a message it holds goes back, and
            # a receive still waiting on the server is cancelled.
            cache = (timeout, ms, xact, body, self._give_back(ms != 0) if flags or ms else None)
            self._receive_cache = cache
        give_back = cache[4]
        response = t.roundtrip(_RECEIVE_OP, cache[3], parse_receive_answer, give_back)
        if response is NOT_SENT:
            response = t.wait(
                t.send(
                    hot.receive_request(
                        self._handle, _RECEIVE_ACTION, ms, 0, 0, xact, CLIENT_RECEIVE_PROPIDS, flags
                    )
                ),
                None,
                give_back,
                abandon=True,
            )
        if type(response) is Message:
            m = response
        elif type(response) is ErrorResponse:
            raise error_from(response)
        else:
            m = self._received(response)  # type: ignore[arg-type]
        m.destination_queue = m.destination_queue or self._format_name
        return m

    def _received(self, response: pm.ReceiveResponse) -> Message:
        """The message of a RECEIVE answer, acknowledged first when the server holds it."""
        m = decode_message(response.packet, response.properties)
        if is_held(response.properties):
            self._end_receive(m)
        return m

    def _end_receive(self, m: Message) -> None:
        """END_RECEIVE RR_ACK for a message the server holds: it is removed (``many.end_receives``;
        raised when refused or not written: the message is then back in its queue)."""
        refused = many.end_receives(self._t, self._handle, [m.lookup_id or 0], RR_ACK)
        if refused is not None:
            raise refused

    def receive_async(
        self, timeout: float | None = None, transaction: RemoteTransaction | int | None = None
    ) -> Pending[Message]:
        """Write the RECEIVE now; ``await`` it (as the embedded coroutine) or ``.result()`` for the
        message."""
        return self._read(_A.MQ_ACTION_RECEIVE, timeout, transaction)

    def peek_async(self, timeout: float | None = None) -> Pending[Message]:
        """Write the PEEK now; ``await`` it (or ``.result()``) for the message."""
        return self._read(_A.MQ_ACTION_PEEK_CURRENT, timeout)

    def receive_many(
        self, count: int, timeout: float | None = 0, transaction: RemoteTransaction | int | None = None
    ) -> list[Message]:
        """Up to ``count`` messages, in RECEIVE_MANY batches (many messages per frame).

        Waits up to ``timeout`` for the first message, then takes the messages available, up to
        ``count``; none in time gives ``[]``.  An error of a later request of the batch (the handle
        closed by another thread, the queue deleted) returns the express messages already taken
        (they are nowhere else) and gives the recoverable ones of the batch back to the queue; it
        is raised when there are none.  A lost connection raises after every answer has arrived
        (the express messages received so far are then lost to the caller, as with a failed
        ``receive``: use a transaction to keep them).  Outside a transaction, recoverable messages
        are removed only once they are here (a two-phase receive, docs/protocol.md 11.y): a
        connection lost on the way gives them back to the queue.
        """
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise MSMQError(f"invalid count {count!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
        ms = timeout_ms(timeout)
        xact = _receive_xact(self._qm, transaction)
        self._check()
        if not count and xact is not None and not self._transactional:
            # (no request is sent for no message: judged here as the server would judge one)
            raise MSMQError(
                "transactional operation on a non-transactional queue", HResult.MQ_ERROR_TRANSACTION_USAGE
            )
        out, self._many_chunk = many.receive_batches(
            self._t, self._handle, count, ms, xact, self._format_name, self._many_chunk
        )
        return out

    def peek(self, timeout: float | None = None) -> Message:
        """Return the first message without removing it."""
        return self._read(_A.MQ_ACTION_PEEK_CURRENT, timeout).take()

    def cursor(self) -> RemoteCursor:
        """A new cursor on this handle (MQ_ERROR_ACCESS_DENIED on a handle opened to send only, as
        the embedded queue manager says it: [MC-MQAC] 3.11.4.1.17 needs PeekAccess or ReceiveAccess)."""
        self._check()
        if not self._access & (MQ_PEEK_ACCESS | MQ_RECEIVE_ACCESS):
            raise MSMQError("the queue was not opened for this access", HResult.MQ_ERROR_ACCESS_DENIED)
        return RemoteCursor(self)

    def _default_cursor(self) -> RemoteCursor:
        cursor = self._cursor
        if cursor is None:
            with _MAKING_CURSOR:  # two threads' first reads share one cursor
                if self._cursor is None:
                    self._cursor = RemoteCursor(self)
                cursor = self._cursor
        return cursor

    def peek_current(self, timeout: float | None = None) -> Message:
        """PeekCurrent on the handle's own cursor."""
        return self._default_cursor().peek_current(timeout)

    def peek_next(self, timeout: float | None = None) -> Message:
        """PeekNext on the handle's own cursor."""
        return self._default_cursor().peek_next(timeout)

    def receive_current(
        self, timeout: float | None = None, transaction: RemoteTransaction | int | None = None
    ) -> Message:
        """ReceiveCurrent on the handle's own cursor."""
        return self._default_cursor().receive_current(timeout, transaction)

    def reset(self) -> None:
        """The handle's cursor goes back before the first message."""
        self._check()
        self._default_cursor().reset()

    # ------------------------------------------------------------------ by message id / correlation id
    def _matching(
        self,
        match: int,
        wanted: ObjectId | bytes | str,
        peek: bool,
        timeout: float | None,
        transaction: object,
    ) -> Pending[Message]:
        # RECEIVE_MATCHING (docs/protocol.md 11); the embedded queue's qm/matching.py semantics.
        target = ObjectId.coerce(wanted)
        ms = timeout_ms(timeout)
        xact = None if peek else _receive_xact(self._qm, transaction)
        self._check()
        t = self._t
        self._need_version(_MATCHING_VERSION, "reads by message id or correlation id need")
        flags = _CONFIRM if xact is None and not peek else 0
        action = _A.MQ_ACTION_PEEK_CURRENT if peek else _A.MQ_ACTION_RECEIVE
        request = pm.ReceiveMatchingRequest(
            self._handle,
            action,
            ms,
            match,
            target.lineage,
            target.uniquifier,
            xact,
            flags,
            CLIENT_RECEIVE_PROPIDS,
        )
        fmt = self._format_name

        def convert(response: pm.ReceiveMatchingResponse) -> Message:
            m = self._received(response)
            m.destination_queue = m.destination_queue or fmt
            return m

        # As a RECEIVE: interrupted, a message the answer holds goes back and a wait is cancelled.
        return t.submit(request, convert, self._give_back(ms != 0) if flags or ms else None)

    def receive_by_id(
        self,
        message_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: RemoteTransaction | int | None = None,
    ) -> Message:
        """Remove and return the message whose ``id`` is ``message_id`` (System.Messaging
        ``ReceiveById``); ``timeout`` 0 by default: MQ_ERROR_MESSAGE_NOT_FOUND when it is not there."""
        return self._matching(PROPID_M_MSGID, message_id, False, timeout, transaction).take()

    def peek_by_id(self, message_id: ObjectId | bytes | str, timeout: float | None = 0) -> Message:
        """Return the message whose ``id`` is ``message_id`` without removing it (``PeekById``)."""
        return self._matching(PROPID_M_MSGID, message_id, True, timeout, None).take()

    def receive_by_correlation_id(
        self,
        correlation_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: RemoteTransaction | int | None = None,
    ) -> Message:
        """Remove and return the first message whose ``correlation_id`` is ``correlation_id``
        (System.Messaging ``ReceiveByCorrelationId``), waiting up to ``timeout`` seconds for it."""
        return self._matching(PROPID_M_CORRELATIONID, correlation_id, False, timeout, transaction).take()

    def peek_by_correlation_id(
        self, correlation_id: ObjectId | bytes | str, timeout: float | None = 0
    ) -> Message:
        """Return the first message whose ``correlation_id`` is ``correlation_id`` without removing
        it (``PeekByCorrelationId``)."""
        return self._matching(PROPID_M_CORRELATIONID, correlation_id, True, timeout, None).take()

    def receive_by_id_async(
        self,
        message_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: RemoteTransaction | int | None = None,
    ) -> Pending[Message]:
        """Write the RECEIVE_MATCHING of ``receive_by_id`` now; ``await`` it (as the embedded
        coroutine) or ``.result()`` for the message."""
        return self._matching(PROPID_M_MSGID, message_id, False, timeout, transaction)

    def peek_by_id_async(
        self, message_id: ObjectId | bytes | str, timeout: float | None = 0
    ) -> Pending[Message]:
        """``peek_by_id``, written now; ``await`` it (or ``.result()``) for the message."""
        return self._matching(PROPID_M_MSGID, message_id, True, timeout, None)

    def receive_by_correlation_id_async(
        self,
        correlation_id: ObjectId | bytes | str,
        timeout: float | None = 0,
        transaction: RemoteTransaction | int | None = None,
    ) -> Pending[Message]:
        """``receive_by_correlation_id``, written now; ``await`` it (or ``.result()``): a
        request/response client on asyncio waits for its reply without blocking its event loop."""
        return self._matching(PROPID_M_CORRELATIONID, correlation_id, False, timeout, transaction)

    def peek_by_correlation_id_async(
        self, correlation_id: ObjectId | bytes | str, timeout: float | None = 0
    ) -> Pending[Message]:
        """``peek_by_correlation_id``, written now; ``await`` it (or ``.result()``)."""
        return self._matching(PROPID_M_CORRELATIONID, correlation_id, True, timeout, None)

    # ------------------------------------------------------------------ lookup ids
    def _lookup(self, action: int, lookup_id: int = 0, transaction: object = None) -> Message:
        return self._read(action, 0, transaction, 0, lookup_id).take()

    def peek_by_lookup_id(self, lookup_id: int) -> Message:
        """The message with ``lookup_id``."""
        return self._lookup(_A.MQ_LOOKUP_PEEK_CURRENT, _check_lookup_id(lookup_id))

    def peek_next_by_lookup_id(self, lookup_id: int) -> Message:
        """The first message after ``lookup_id``."""
        return self._lookup(_A.MQ_LOOKUP_PEEK_NEXT, _check_lookup_id(lookup_id))

    def peek_previous_by_lookup_id(self, lookup_id: int) -> Message:
        """The last message before ``lookup_id``."""
        return self._lookup(_A.MQ_LOOKUP_PEEK_PREV, _check_lookup_id(lookup_id))

    def peek_first_by_lookup_id(self) -> Message:
        """The first message (never waits)."""
        return self._lookup(_A.MQ_LOOKUP_PEEK_FIRST)

    def peek_last_by_lookup_id(self) -> Message:
        """The last message (never waits)."""
        return self._lookup(_A.MQ_LOOKUP_PEEK_LAST)

    def receive_by_lookup_id(
        self, lookup_id: int, transaction: RemoteTransaction | int | None = None
    ) -> Message:
        """Receive the message with ``lookup_id``."""
        return self._lookup(_A.MQ_LOOKUP_RECEIVE_CURRENT, _check_lookup_id(lookup_id), transaction)

    def receive_next_by_lookup_id(
        self, lookup_id: int, transaction: RemoteTransaction | int | None = None
    ) -> Message:
        """Receive the first unlocked message after ``lookup_id``."""
        return self._lookup(_A.MQ_LOOKUP_RECEIVE_NEXT, _check_lookup_id(lookup_id), transaction)

    def receive_previous_by_lookup_id(
        self, lookup_id: int, transaction: RemoteTransaction | int | None = None
    ) -> Message:
        """Receive the last unlocked message before ``lookup_id``."""
        return self._lookup(_A.MQ_LOOKUP_RECEIVE_PREV, _check_lookup_id(lookup_id), transaction)

    def receive_first_by_lookup_id(self, transaction: RemoteTransaction | int | None = None) -> Message:
        """Receive the first unlocked message (never waits)."""
        return self._lookup(_A.MQ_LOOKUP_RECEIVE_FIRST, 0, transaction)

    def receive_last_by_lookup_id(self, transaction: RemoteTransaction | int | None = None) -> Message:
        """Receive the last unlocked message (never waits)."""
        return self._lookup(_A.MQ_LOOKUP_RECEIVE_LAST, 0, transaction)

    def receive_by_lookup_id_allow_peek(
        self, lookup_id: int, transaction: RemoteTransaction | int | None = None
    ) -> Message:
        """Like ``receive_by_lookup_id``; peeks still see the message until the transaction ends."""
        return self._lookup(_A.MQ_LOOKUP_RECEIVE_ALLOW_PEEK, _check_lookup_id(lookup_id), transaction)

    # ------------------------------------------------------------------ purge and move
    def purge(self) -> None:
        """Delete every message that is not locked."""
        self._check()
        self._t.call(pm.PurgeQueueRequest(self._handle))

    def mark_rejected(self, lookup_id: int, transaction: RemoteTransaction) -> None:
        """Mark the message with ``lookup_id`` rejected in ``transaction`` (MQMarkMessageRejected):
        received in it, it leaves with MQMSG_CLASS_NACK_RECEIVE_REJECTED when it commits."""
        lookup_id = _check_lookup_id(lookup_id)
        if not isinstance(transaction, RemoteTransaction):
            raise MSMQError(
                "mark_rejected must be called inside a transaction (a RemoteTransaction)",
                HResult.MQ_ERROR_TRANSACTION_USAGE,
            )
        self._check()
        self._need_version(_REJECT_VERSION, "mark_rejected needs")
        self._t.call(pm.MarkRejectedRequest(self._handle, lookup_id, _xact(self._qm, transaction)))

    def move(
        self,
        lookup_id: int,
        target: RemoteQueue | str | None,
        transaction: RemoteTransaction | int | None = None,
    ) -> None:
        """Move a message between this queue and one of its subqueues (move count + 1)."""
        lookup_id = _check_lookup_id(lookup_id)
        if isinstance(target, RemoteQueue):
            if target._path.lower() != self._path.lower() or target._qm is not self._qm:
                raise MSMQError(
                    "moves stay within one queue and its subqueues", HResult.MQ_ERROR_INVALID_PARAMETER
                )
            name = target._subqueue or ""
        elif target is None or isinstance(target, str):
            name = validate_subqueue_name(target) if target else ""
        else:
            raise MSMQError(f"invalid move target {target!r}", HResult.MQ_ERROR_INVALID_PARAMETER)
        xact = _xact(self._qm, transaction)
        self._check()
        self._t.call(pm.MoveRequest(self._handle, lookup_id, name, xact))
