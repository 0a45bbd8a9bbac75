"""The operations of docs/protocol.md 5 that map one-to-one onto the embedded queue manager.

``OpsMixin`` is mixed into ``Session``: each ``op_*`` method takes the decoded request and returns
its response payload or raises ``MSMQError`` (which becomes an ERROR frame).  SEND and RECEIVE live
in ``session.py`` because of their scheduling rules.  Rights are checked per authenticated identity
([MS-MQMQ] 2.2.24 MQQUEUEACCESSMASK; 2.2.23 MQSEC_CREATE_QUEUE for queue creation).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from pymsmq.errors import MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.model.queue_properties import QueueProperties
from pymsmq.protocol import MAX_PAYLOAD, ServerConnection
from pymsmq.protocol import messages as pm
from pymsmq.protocol._fields import PROPS, Props
from pymsmq.protocol.codes import RR_ACK, RR_NACK, ManyMore, QueueFilter, RangeFlags
from pymsmq.protocol.message_batch import encode_batch
from pymsmq.protocol.queue_props import properties_to_props, props_to_attrs
from pymsmq.qm.hold import Hold
from pymsmq.qm.queue import Queue
from pymsmq.qm.range_read import read_range
from pymsmq.qm.statistics import statistics_of
from pymsmq.server.access import MACHINE_KEY, handle_key, queue_key, receive_right
from pymsmq.server.queue_sizes import queue_path_names, queue_sizes
from pymsmq.wire._buffer import Writer
from pymsmq.wire.propids import PROPID_Q_JOURNAL, PROPID_Q_LABEL
from pymsmq.wire.propvariant import PropVariant
from pymsmq.wire.security import MQQMAccessMask, MQQueueAccessMask
from pymsmq.wire.vartype import VarType

if TYPE_CHECKING:
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.transaction import Transaction
    from pymsmq.server.access import AccessPolicy
    from pymsmq.server.app import Server
    from pymsmq.server.holds import Holds
    from pymsmq.server.session import Handle
    from pymsmq.server.stats import ServerStats
    from pymsmq.server.waits import ArrivalWait, Cancels

__all__ = ["PROPID_PYMSMQ_SERVER_STATS", "OpsMixin", "queue_stats", "stats_text"]

_M = MQQueueAccessMask
_V = VarType
#: pymsmq extension (docs/protocol.md): STATS "" also returns the server's statistics as JSON text.
PROPID_PYMSMQ_SERVER_STATS: Final = 0x7F000002
_CREATE_ARGS: Final = frozenset(
    {
        "transactional",
        "journal",
        "label",
        "quota",
        "journal_quota",
        "base_priority",
        "authenticate",
        "priv_level",
        "multicast_address",
        "service_type_guid",
    }
)
_PEEK_ONLY: Final = 0x20  # MQ_PEEK_ACCESS
_DENY_RECEIVE_SHARE: Final = 1  # MQSHARE MQ_DENY_RECEIVE_SHARE
#: A connection's transaction table forgets its finished transactions when it reaches at least this.
FORGET_TRANSACTIONS_AT: Final = 64


#: Bytes of a STATS answer kept for everything but the statistics text and the queue list.
_STATS_SLACK: Final = 64 * 1024
#: Bytes of names and property arrays one LIST_QUEUES_PAGE answer holds at most: a frame payload,
#: less room for the rest of the answer (its two counts and ``more``).
LIST_PAGE_BUDGET: Final = MAX_PAYLOAD
_PAGE_SLACK: Final = 1024


def stats_text(snapshot: dict[str, Any], room: int) -> str:
    """``snapshot`` as JSON in at most ``room`` characters: when the per-queue entries do not all
    fit (many thousands of queues), as many as fit, the busiest first, and ``queues_omitted``
    says how many were left out (one answer is one frame: it failed as a whole before)."""
    text = json.dumps(snapshot)
    if len(text) <= room:
        return text
    queues: dict[str, Any] = snapshot.get("queues", {})
    rest = {k: v for k, v in snapshot.items() if k != "queues"}
    used = len(json.dumps({**rest, "queues": {}, "queues_omitted": len(queues)}))
    kept: dict[str, Any] = {}

    def traffic(item: tuple[str, Any]) -> int:
        counters = item[1]
        return -sum(int(counters.get(k, 0) or 0) for k in ("sent", "received", "messages"))

    for name, counters in sorted(queues.items(), key=traffic):
        size = len(json.dumps({name: counters})) + 1
        if used + size > room:
            break
        kept[name] = counters
        used += size
    return json.dumps({**rest, "queues": kept, "queues_omitted": len(queues) - len(kept)})


def queue_stats(qm: QueueManager, name: str, propids: tuple[int, ...]) -> Props:
    """PROPID_MGMT_QUEUE_* values of queue ``name`` ([MS-MQMQ] 2.3.12), and its PROPID_Q_JOURNAL
    and PROPID_Q_LABEL (``QueueStatistics``: a listing's row in one answer)."""
    st = statistics_of(qm, name)
    values: dict[int, PropVariant] = {
        1: PropVariant(_V.VT_LPWSTR, st.path_name),
        2: PropVariant(_V.VT_LPWSTR, st.format_name),
        4: PropVariant(_V.VT_LPWSTR, "LOCAL"),
        5: PropVariant(_V.VT_LPWSTR, "YES" if st.transactional else "NO"),
        7: PropVariant(_V.VT_UI4, min(st.message_count, 0xFFFFFFFF)),
        8: PropVariant(_V.VT_UI4, min(st.bytes_in_queue, 0xFFFFFFFF)),
        9: PropVariant(_V.VT_UI4, min(st.journal_message_count, 0xFFFFFFFF)),
        26: PropVariant(_V.VT_UI4, len(st.subqueue_names)),
        27: PropVariant(_V.VT_VECTOR_LPWSTR, st.subqueue_names),
        PROPID_Q_JOURNAL: PropVariant(_V.VT_UI1, int(st.journal)),
        PROPID_Q_LABEL: PropVariant(_V.VT_LPWSTR, st.label),
    }
    wanted = propids or tuple(values)
    return tuple((pid, values[pid]) for pid in wanted if pid in values)


class OpsMixin:
    """``op_*`` implementations for ``Session``."""

    qm: QueueManager
    stats: ServerStats
    identity: str
    handles: dict[int, Handle]
    holds: Holds
    cancels: Cancels
    waits: set[ArrivalWait]
    cursors: dict[int, Any]
    transactions: dict[Any, Transaction]
    ending: set[Any]
    forget_transactions_at: int
    server: Server
    conn: ServerConnection
    _next_cursor: int

    if TYPE_CHECKING:

        @property
        def policy(self) -> AccessPolicy: ...

        def handle(self, number: int) -> Handle: ...
        def off_loop(self, rid: int, fn: Callable[[], pm.Response], handle: Handle | None = None) -> None: ...
        def check(self, h: Handle, needed: int, what: str) -> None: ...
        def open_handle(self, queue: Queue) -> tuple[int, Handle]: ...
        def transaction(self, ref: object) -> Any: ...
        def receive_transaction(self, ref: object) -> Any: ...
        def server_snapshot(self) -> dict[str, Any]: ...
        def release_later(self, held: list[Hold]) -> None: ...

    def _has_every_right(self) -> bool:
        # The owner: no per-queue lookup needed.  Not "the rights of the empty key are every bit":
        # a pattern ("*": 4294967295) matches the empty key, and an exact entry ("none") of a
        # queue would then be skipped by every request naming the queue.
        return self.identity == self.policy.owner

    def _check_name(self, name: str, needed: int, what: str) -> None:
        if self._has_every_right():
            return  # skip the name lookup
        path = self.qm.get_queue_properties(name).path_name
        self.policy.check(self.identity, queue_key(path), needed, what)

    def _rights_on_path(self, path: str) -> int:
        return self.policy.rights_of(self.identity, queue_key(path))

    def _visible(self, paths: list[str]) -> list[str]:
        """The queues of ``paths`` this identity has any right on (the others it cannot use)."""
        if self._has_every_right():
            return paths
        return [p for p in paths if self._rights_on_path(p)]

    def _may_read_stats(self, path: str) -> bool:
        return bool(self._rights_on_path(path) & _M.MQSEC_GET_QUEUE_PROPERTIES)

    # ------------------------------------------------------------------ queue manager
    def op_ping(self, req: pm.PingRequest) -> pm.Response:
        return pm.PingResponse(req.data)

    def op_stats(self, req: pm.StatsRequest) -> pm.Response:
        if req.name:
            self._check_name(req.name, _M.MQSEC_GET_QUEUE_PROPERTIES, "read statistics of")
            return pm.StatsResponse(queue_stats(self.qm, req.name, req.propids))
        qm = self.qm
        private = tuple(self._visible(qm.private_queues))
        # UTF-16 on the wire: what the answer's other parts leave of a frame, in characters.
        room = (MAX_PAYLOAD - 2 * sum(len(p) + 1 for p in private) - _STATS_SLACK) // 2
        values: dict[int, PropVariant] = {
            # PROPID_MGMT_MSMQ_PRIVATEQ: the queues this identity has a right on (as LIST_QUEUES)
            2: PropVariant(_V.VT_VECTOR_LPWSTR, private),
            4: PropVariant(_V.VT_LPWSTR, "CONNECTED"),  # PROPID_MGMT_MSMQ_CONNECTED
            5: PropVariant(_V.VT_LPWSTR, "pymsmq"),  # PROPID_MGMT_MSMQ_TYPE
            # PROPID_MGMT_MSMQ_BYTES_IN_ALL_QUEUES: of the queues this identity sees, as _PRIVATEQ
            # (outside QA: a monitoring identity's `pymsmq stats` total was every queue's).
            6: PropVariant(_V.VT_UI8, self._visible_bytes()),
            PROPID_PYMSMQ_SERVER_STATS: PropVariant(_V.VT_LPWSTR, stats_text(self.server_snapshot(), room)),
        }
        wanted = req.propids or tuple(values)
        return pm.StatsResponse(tuple((pid, values[pid]) for pid in wanted if pid in values))

    def _visible_bytes(self) -> int:
        """The bytes of every message of the queue manager, or, for an identity restricted by the
        policy, of the queues it has a right on (their subqueues' included, journals not)."""
        qm = self.qm
        if self._has_every_right():
            return qm.total_bytes
        sizes = queue_sizes(qm)
        paths = queue_path_names(qm)
        seen = set(self._visible([paths[fmt] for fmt in sizes]))
        return sum(size for fmt, (_, size) in sizes.items() if paths[fmt] in seen)

    def op_list_queues(self, req: pm.ListQueuesRequest) -> pm.Response:
        listed: list[str] = []
        props: list[Props] = []
        for name in self._visible(self._queue_names(req.filter)):
            stats = self._listed_properties(name, req.propids)
            if stats is not None:
                listed.append(name)
                props.append(stats)
        return pm.ListQueuesResponse(tuple(listed), tuple(props))

    def op_list_queues_page(self, req: pm.ListQueuesPageRequest) -> pm.Response:
        # LIST_QUEUES's answer a page at a time, in case-insensitive path name order, each page
        # within one frame (docs/protocol.md, LIST_QUEUES_PAGE).
        names = sorted(self._queue_names(req.filter), key=str.casefold)
        after = req.after.casefold()
        start = bisect.bisect_right(names, after, key=str.casefold) if req.after else 0
        listed: list[str] = []
        props: list[Props] = []
        used = 0
        more = 0
        budget = min(LIST_PAGE_BUDGET, self.conn.send_limit) - _PAGE_SLACK
        for name in self._visible(names[start:]):
            if req.max_count and len(listed) >= req.max_count:
                more = 1
                break
            stats = self._listed_properties(name, req.propids)
            if stats is None:
                continue
            w = Writer()
            PROPS.write(w, stats)
            size = 2 + len(name.encode("utf-16-le", "surrogatepass")) + len(w)  # its STR and PROPS
            if listed and used + size > budget:
                more = 1
                break
            listed.append(name)
            props.append(stats)
            used += size
        return pm.ListQueuesPageResponse(tuple(listed), tuple(props), more)

    def _queue_names(self, which: int) -> list[str]:
        """The path names of the queues LIST_QUEUES's ``filter`` ``which`` selects."""
        qm = self.qm
        if which not in (0, 1, 2, 3):
            raise MSMQError(f"unknown queue filter {which}", HResult.MQ_ERROR_INVALID_PARAMETER)
        names: list[str] = []
        if which in (QueueFilter.ALL, QueueFilter.PRIVATE):
            names += qm.private_queues
        if which in (QueueFilter.ALL, QueueFilter.PUBLIC):
            names += qm.public_queues
        if which in (QueueFilter.ALL, QueueFilter.SYSTEM):
            for q in (qm.machine_journal, qm.dead_letter_queue, qm.transactional_dead_letter_queue):
                names.append(q.path_name)
                q.close()
        return names

    def _listed_properties(self, name: str, propids: tuple[int, ...]) -> Props | None:
        """A listed queue's properties: its PROPID_MGMT_QUEUE_* ``propids`` as STATS of it gives them,
        none without MQSEC_GET_QUEUE_PROPERTIES on it; None when it was deleted since it was listed
        (left out, not the whole answer failed)."""
        if not propids or not self._may_read_stats(name):
            return ()
        try:
            return queue_stats(self.qm, name, propids)
        except MSMQError as exc:
            if exc.hresult == HResult.MQ_ERROR_QUEUE_NOT_FOUND:
                return None
            raise

    # ------------------------------------------------------------------ queues
    def op_create_queue(self, req: pm.CreateQueueRequest) -> pm.Response:
        self.policy.check(self.identity, MACHINE_KEY, MQQMAccessMask.MQSEC_CREATE_QUEUE, "create queues on")
        attrs = props_to_attrs(req.properties)
        extra = set(attrs) - _CREATE_ARGS
        if extra:
            raise MSMQError(f"cannot set {sorted(extra)} at creation", HResult.MQ_ERROR_PROPERTY_NOTALLOWED)
        q = self.qm.create_queue(req.path, **attrs)  # type: ignore[arg-type]
        try:
            return pm.CreateQueueResponse(q.format_name)
        finally:
            q.close()

    def op_delete_queue(self, req: pm.DeleteQueueRequest) -> pm.Response:
        self._check_name(req.name, _M.MQSEC_DELETE_QUEUE, "delete")
        with self.qm.queue(req.name, _PEEK_ONLY) as q:
            format_name = q.format_name
        self.qm.delete_queue(req.name)
        # Its counters go (a queue created again under the name starts from zero); those of its
        # journal, subqueues and other names for it go at the next STATS (Server.snapshot).
        self.stats.forget(format_name)
        return pm.DeleteQueueResponse()

    def op_open_queue(self, req: pm.OpenQueueRequest) -> pm.Response:
        if req.share_mode == _DENY_RECEIVE_SHARE and not self._has_every_right():
            # MQ_DENY_RECEIVE_SHARE keeps every other reader out of the queue while the handle is
            # open: only for an identity that may receive from it ([MS-MQMQ] 2.2.24), not one with
            # a right to peek or read properties only (it could lock the queue's consumers out).
            # Checked before the share mode takes effect (a handle without it tells the rights).
            probe = self.qm.queue(req.name, req.access)
            try:
                key, journal = handle_key(probe.path_name)
            finally:
                probe.close()
            if receive_right(journal) & ~self.policy.rights_of(self.identity, key):
                raise MSMQError(
                    f"{quoted(self.identity)} may not open {quoted(key)} with MQ_DENY_RECEIVE_SHARE:"
                    " it needs the right to receive from it",
                    HResult.MQ_ERROR_ACCESS_DENIED,
                )
        q = self.qm.queue(req.name, req.access, req.share_mode)
        number, h = self.open_handle(q)
        if not h.rights:
            del self.handles[number]
            self.holds.close_handle(number)
            q.close()
            if q._fans_out:
                raise MSMQError(
                    f"{quoted(self.identity)} may not send to every queue of {quoted(h.key)}",
                    HResult.MQ_ERROR_ACCESS_DENIED,
                )
            raise MSMQError(
                f"{quoted(self.identity)} has no rights on {quoted(h.key)}", HResult.MQ_ERROR_ACCESS_DENIED
            )
        if q._fans_out:
            # A multiple-element name has no properties of its own: what a client needs to send.
            props = QueueProperties(transactional=q.transactional)
            return pm.OpenQueueResponse(number, h.format_name, properties_to_props(props))
        return pm.OpenQueueResponse(number, h.format_name, properties_to_props(q.properties))

    def op_close_queue(self, req: pm.CloseQueueRequest) -> pm.Response:
        h = self.handles.pop(req.handle, None)
        if h is None:
            raise MSMQError(f"no queue handle {req.handle}", HResult.MQ_ERROR_INVALID_HANDLE)
        for c in h.cursors:
            self.cursors.pop(c, None)
        # Reads parked on the handle's arrival notification end as a read blocked on a handle that
        # is closed does in the queue manager (qm.waiters): MQ_ERROR_OPERATION_CANCELLED ([MS-MQDMPR]
        # 3.1.7.1.6).  Closing the queue only cancels the notification silently, which left the
        # request unanswered.
        closed = MSMQError(
            f"the queue handle {req.handle} was closed: the waiting read was cancelled",
            HResult.MQ_ERROR_OPERATION_CANCELLED,
        )
        for wait in [w for w in self.waits if w.handle is h]:
            wait.abandon(closed)
        h.queue.close()
        held = self.holds.close_handle(req.handle)
        if held:  # never acknowledged, and END_RECEIVE needs an open handle: back in their queues
            self.release_later(held)
        return pm.CloseQueueResponse()

    def op_get_queue_properties(self, req: pm.GetQueuePropertiesRequest) -> pm.Response:
        self._check_name(req.name, _M.MQSEC_GET_QUEUE_PROPERTIES, "read properties of")
        props = properties_to_props(self.qm.get_queue_properties(req.name))
        if req.propids:
            wanted = set(req.propids)
            props = tuple(p for p in props if p[0] in wanted)
        return pm.GetQueuePropertiesResponse(props)

    def op_set_queue_properties(self, req: pm.SetQueuePropertiesRequest) -> pm.Response:
        self._check_name(req.name, _M.MQSEC_SET_QUEUE_PROPERTIES, "change properties of")
        attrs = props_to_attrs(req.properties)
        return pm.SetQueuePropertiesResponse(
            properties_to_props(self.qm.set_queue_properties(req.name, **attrs))
        )

    def op_purge_queue(self, req: pm.PurgeQueueRequest) -> pm.Response:
        h = self.handle(req.handle)
        self.check(h, _M.MQSEC_DELETE_JOURNAL_MESSAGE if h.journal else _M.MQSEC_DELETE_MESSAGE, "purge")
        h.queue.purge()
        return pm.PurgeQueueResponse()

    # ------------------------------------------------------------------ cursors and moves
    def op_create_cursor(self, req: pm.CreateCursorRequest) -> pm.Response:
        h = self.handle(req.handle)
        limit = self.server.config.max_cursors
        if len(self.cursors) >= limit:
            raise MSMQError(
                f"this connection has {limit} cursors open, the server's limit: close some first",
                HResult.MQ_ERROR_INSUFFICIENT_RESOURCES,
            )
        cursor = h.queue.cursor()
        number = self._next_cursor
        self._next_cursor += 1
        self.cursors[number] = (cursor, req.handle)
        h.cursors.add(number)
        return pm.CreateCursorResponse(number)

    def op_close_cursor(self, req: pm.CloseCursorRequest) -> pm.Response:
        entry = self.cursors.pop(req.cursor, None)
        if entry is None:
            raise MSMQError(f"no cursor {req.cursor}", HResult.MQ_ERROR_INVALID_HANDLE)
        h = self.handles.get(entry[1])
        if h is not None:
            h.cursors.discard(req.cursor)
        # [MS-MQDMPR] 3.1.7.1.2: the reads parked at the cursor end (MQ_ERROR_OPERATION_CANCELLED).
        entry[0].close()
        return pm.CloseCursorResponse()

    def op_move(self, req: pm.MoveRequest) -> pm.Response:
        h = self.handle(req.handle)
        self.check(h, _M.MQSEC_RECEIVE_MESSAGE, "move messages of")
        h.queue.move(req.lookup_id, req.target or None, self.transaction(req.transaction))
        self.stats.queue(h.stats_key).moved += 1  # (outside QA: moves were counted nowhere)
        return pm.MoveResponse()

    def op_mark_rejected(self, req: pm.MarkRejectedRequest) -> pm.Response:
        h = self.handle(req.handle)
        self.check(h, _M.MQSEC_RECEIVE_MESSAGE, "reject messages of")
        # (A constant in place of a BEGIN_TRANSACTION GUID: the queue manager's TRANSACTION_USAGE.)
        h.queue.mark_rejected(req.lookup_id, self.transaction(req.transaction))
        return pm.MarkRejectedResponse()

    def _end_receive(self, rid: int, req: pm.EndReceiveRequest) -> None:
        """END_RECEIVE ([MS-MQRR] 3.1.4.9): RR_ACK removes the held message (answered once that is
        durable), RR_NACK puts it back in its place.

        The hold leaves the registry here, on the loop, as the frame is read: a connection that
        closes right after its RR_ACK then cannot give the message back (to be received twice)
        while the removal waits for a pool thread.
        """
        if req.ack not in (RR_ACK, RR_NACK):
            raise MSMQError(
                f"END_RECEIVE ack {req.ack} is neither RR_ACK nor RR_NACK", HResult.MQ_ERROR_INVALID_PARAMETER
            )
        if req.handle not in self.handles:  # [MS-MQRR] 3.1.4.9: a handle not closed
            raise MSMQError(f"no queue handle {req.handle}", HResult.MQ_ERROR_INVALID_HANDLE)
        hold = self.holds.pop(req.handle, req.lookup_id)
        if hold is None:
            raise MSMQError(
                f"no message {req.lookup_id} is held on handle {req.handle}",
                HResult.MQ_ERROR_MESSAGE_NOT_FOUND,
            )
        end = hold.confirm if req.ack == RR_ACK else hold.release

        def run() -> pm.Response:
            end()
            return pm.EndReceiveResponse()

        self.off_loop(rid, run)

    def op_cancel_receive(self, req: pm.CancelReceiveRequest) -> pm.Response:
        """CANCEL_RECEIVE ([MS-MQRR] 3.1.4.8 R_CancelReceive): the RECEIVE or RECEIVE_MANY
        ``request_id`` on ``handle`` that waits for a message stops waiting and is answered
        MQ_ERROR_OPERATION_CANCELLED; STATUS_NOT_FOUND when no such read waits ([MS-MQDMPR]
        3.1.7.1.17: it was answered already, or never waited)."""
        h = self.handle(req.handle)  # [MS-MQRR] 3.1.4.8: a handle not closed
        stop = self.cancels.take(req.request_id, h)
        if stop is None:
            raise MSMQError(
                f"no read {req.request_id} waits on handle {req.handle}", HResult.STATUS_NOT_FOUND
            )
        stop()
        return pm.CancelReceiveResponse()

    # ------------------------------------------------------------------ transactions
    def op_begin_transaction(self, req: pm.BeginTransactionRequest) -> pm.Response:
        limit = self.server.config.max_transactions
        table = len(self.transactions)
        if table >= self.forget_transactions_at or table - len(self.ending) >= limit:
            # Forget finished transactions (their ids then give MQ_ERROR_TRANSACTION_USAGE): a pass
            # each time the table has doubled since the last one left it (at least 64), so a
            # connection keeps about as many finished ones as active ones (a pass only at the limit
            # never came for a client that ends each transaction: ``ending`` kept the difference
            # at 0, and every transaction stayed until the connection closed, 1.1 KB each; outside
            # QA).  If every one is still active, refuse: a connection beginning transactions
            # without ending them took the server's memory (400,000 took 143 MB in 12 s).  One
            # whose COMMIT or ABORT is on its way (``ending``) does not count.
            for tid in [t for t, tx in self.transactions.items() if not tx.active]:
                del self.transactions[tid]
                self.ending.discard(tid)
            self.forget_transactions_at = max(FORGET_TRANSACTIONS_AT, 2 * len(self.transactions))
            if len(self.transactions) - len(self.ending) >= limit:
                raise MSMQError(
                    f"this connection has {limit} active transactions, the server's limit: commit"
                    " or abort some first",
                    HResult.MQ_ERROR_INSUFFICIENT_RESOURCES,
                )
        tx = self.qm.begin_transaction()
        self.transactions[tx.id] = tx
        return pm.BeginTransactionResponse(tx.id)

    def op_commit_transaction(self, req: pm.CommitTransactionRequest) -> pm.Response:
        self.transaction(req.transaction).commit()
        return pm.CommitTransactionResponse()

    def op_abort_transaction(self, req: pm.AbortTransactionRequest) -> pm.Response:
        self.transaction(req.transaction).abort()
        return pm.AbortTransactionResponse()

    # ------------------------------------------------------------------ bulk reads (pymsmq extension)
    def op_read_range(self, req: pm.ReadRangeRequest) -> pm.Response:
        h = self.handle(req.handle)
        receive = bool(req.flags & RangeFlags.RECEIVE)
        if receive:
            self.check(h, receive_right(h.journal), "receive from")
        else:
            self.check(h, _M.MQSEC_PEEK_MESSAGE, "peek at")
        tx = self.receive_transaction(req.transaction) if receive else None
        no_data = bool(req.flags & RangeFlags.NO_DATA)
        # Two-phase (CONFIRM, outside a transaction, with data): the recoverable messages are held
        # until END_RECEIVE names the first message of the batch (holds.py, [MS-MQRR] 3.1.4.9).
        hold = Hold() if receive and tx is None and not no_data and req.flags & RangeFlags.CONFIRM else None
        r = read_range(
            h.queue,
            req.from_lookup_id,
            req.to_lookup_id,
            req.max_count,
            req.max_bytes,
            receive,
            tx if hold is None else hold,
            req.min_priority,
            req.max_priority,
            bool(req.flags & RangeFlags.UNTIL_HELD),
            bool(req.flags & RangeFlags.PAST_PENDING),
            req.max_bytes if no_data and req.flags & RangeFlags.MOVED_BEFORE else None,
        )
        more = int(r.more)
        try:
            batch = (
                b""
                if no_data
                else encode_batch(
                    r.messages,
                    bool(req.flags & RangeFlags.LAST_MOVE_TIME),
                    bool(req.flags & RangeFlags.DESTINATION_FORMAT_NAME),
                )
            )
        except BaseException:
            if hold is not None:
                hold.release()
            raise
        if hold is not None and hold.held:
            self.holds.keep(req.handle, r.messages[0].lookup_id, hold)
            more |= ManyMore.HELD
        counters = self.stats.queue(h.stats_key)
        if receive:
            counters.received += len(r.messages)
        else:
            counters.peeked += len(r.messages)
        return pm.ReadRangeResponse(
            len(r.messages),
            more,
            r.next_lookup_id,
            r.first_lookup_id,
            r.high_water,
            r.queue_count,
            batch,
        )
