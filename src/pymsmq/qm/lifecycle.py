"""Message lifecycle: expiry, dead-letter queues, journals, acknowledgements and trace reports.

The queue manager calls into ``Lifecycle`` (``qm._life``) with its lock held whenever a message
arrives in, leaves or fails to reach an application queue.  Every durable change goes into the
``Batch`` the caller passes and applies (under the same lock, so nobody sees a half-done move).

Rules (decisions are recorded in docs/lifecycle.md):

* Time-To-Be-Received expiry ([MC-MQAC] 3.1.6.1.1, [MS-MQDMPR] 3.1.7.2.7): a Locked message waits
  for its transaction (commit: gone; abort: expires then); otherwise the message is deleted with
  reason NackReceiveTimeout: NACK_RECEIVE_TIMEOUT (0xC002) to the admin queue if NEG_RECEIVE was
  requested, and with MQMSG_DEADLETTER a move to the dead-letter queue: transactional queue and
  locally sent message -> transactional DLQ; non-transactional queue -> DLQ.  A per-message
  dead-letter queue (PROPID_M_DEADLETTER_QUEUE, [MS-MQDMPR] 3.1.1.12 ApplicationDeadletterQueue
  "SHOULD be used for undeliverable JN messages") takes precedence when it names a local queue.
* Time-To-Reach-Queue: a local message reaches its queue at send (a transactional one as a pending
  message, visible at commit), so no TTRQ ends it: "If the queue is local, the message will always
  reach it" (System.Messaging Message.TimeToReachQueue).  NACK_REACH_QUEUE_TIMEOUT (0x8002) is for
  messages in outgoing queues ([MS-MQQB] 3.1.7.1.2), which pymsmq does not have yet.
* Arrival failures ([MS-MQQB] 3.1.5.8.2 / 3.1.5.8.8): queue quota (0x8003), bad destination
  (0x8000, queue deleted before commit), access denied and the other NACK classes via
  ``QueueManager.reject_message``: NACK if NEG_ARRIVAL, dead-lettered with MQMSG_DEADLETTER.
* Removal ([MS-MQDMPR] 3.1.7.2.1 Message Position Deleted, [MS-MQQB] 3.1.7.2.1): received ->
  ACK_RECEIVE (0x4000) if POS_RECEIVE, copy to the queue journal if the queue journals, copy to the
  machine journal for MQMSG_JOURNAL on a transactional message; purged / queue deleted ->
  NACK_Q_PURGED (0xC001) / NACK_Q_DELETED (0xC000) if NEG_RECEIVE and, for a transactional JN
  message sent here, the transactional DLQ (the negative FinalAck's effect, [MS-MQQB] A17).
* Arrival ([MS-MQQB] 3.1.5.8.9/10): ACK_REACH_QUEUE (0x0002) if POS_ARRIVAL; a trace report (class
  REPORT) to the report queue if tracing was requested; MQMSG_JOURNAL on a non-transactional
  message -> machine journal copy (delivery confirmed).
* Acknowledgements ([MS-MQQB] 3.1.7.15): class as above; correlation id = original id; label =
  original label; response queue = original destination; delivery = original delivery; no acks,
  infinite timers, no journaling; body copied except for ACK_REACH_QUEUE / ACK_RECEIVE; insecure
  NACKs (bad destination, access denied, bad signature/encryption, crypto provider) only when
  ``send_insecure_nacks``.  No admin queue, or one that is not a local non-transactional
  application queue, or one over quota: the ack is discarded.  A multiple-element admin queue
  name: a copy of the ack to each local queue it names (``admin_queues``).
* Journals and dead-letter queues are system queues: messages in them never expire, are never
  acknowledged or journaled again.  Journal copies over the journal quota (queue journal quota, or
  the machine journal quota for all journals together) are discarded ([MS-MQDMPR] 3.1.1.12).
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Final

from pymsmq.errors import MSMQError
from pymsmq.model.ids import ObjectId
from pymsmq.model.message import Message
from pymsmq.model.packet_queues import MAX_NAME_ELEMENTS, name_elements
from pymsmq.qm.index import AVAILABLE, PENDING, Entry
from pymsmq.qm.queue_state import message_size
from pymsmq.qm.store.base import Batch, MessageKey
from pymsmq.qm.timers import TimerHeap

if TYPE_CHECKING:
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = [
    "ACK_CLASSES",
    "ARRIVAL_EVENTS",
    "RECEIPTS",
    "REPORT_QUEUE_TYPE",
    "Effects",
    "Lifecycle",
]

# MQMSGACKNOWLEDGEMENT bits ([MC-MQAC] 2.2.2.x, [MS-MQMQ] 2.2.18.1.6 UserHeader flags).
_POS_ARRIVAL: Final = 0x1
_POS_RECEIVE: Final = 0x2
_NEG_ARRIVAL: Final = 0x4
_NEG_RECEIVE: Final = 0x8
# MQMSGJOURNAL bits.
_DEADLETTER: Final = 0x1
_JOURNAL: Final = 0x2

# Message classes ([MS-MQMQ] 2.2.18.1.6).
REPORT: Final = 0x0001
ACK_REACH_QUEUE: Final = 0x0002
ACK_RECEIVE: Final = 0x4000
NACK_BAD_DST_Q: Final = 0x8000
NACK_REACH_QUEUE_TIMEOUT: Final = 0x8002
NACK_Q_EXCEED_QUOTA: Final = 0x8003
NACK_ACCESS_DENIED: Final = 0x8004
NACK_BAD_SIGNATURE: Final = 0x8006
NACK_BAD_ENCRYPTION: Final = 0x8007
NACK_UNSUPPORTED_CRYPTO_PROVIDER: Final = 0x800B
NACK_Q_DELETED: Final = 0xC000
NACK_Q_PURGED: Final = 0xC001
NACK_RECEIVE_TIMEOUT: Final = 0xC002
NACK_RECEIVE_REJECTED: Final = 0xC004
NACK_MESSAGE_TOO_LARGE: Final = 0x800D

#: The acknowledgement bit that asks for each class (arrival NACKs 0x8xxx, receive NACKs 0xCxxx).
ACK_CLASSES: Final = {ACK_REACH_QUEUE: _POS_ARRIVAL, ACK_RECEIVE: _POS_RECEIVE}
# [MS-MQQB] 3.1.7.15 step 2: NACKs suppressed unless SendInsecureNacks.
_INSECURE: Final = frozenset(
    {
        NACK_BAD_DST_Q,
        NACK_BAD_ENCRYPTION,
        NACK_BAD_SIGNATURE,
        NACK_ACCESS_DENIED,
        NACK_UNSUPPORTED_CRYPTO_PROVIDER,
    }
)
# [MS-MQQB] 3.1.7.15 step 5: these acks carry no body.
_NO_BODY: Final = frozenset({ACK_REACH_QUEUE, ACK_RECEIVE, NACK_MESSAGE_TOO_LARGE})
_APP_KINDS: Final = frozenset({"private", "public"})
#: [MS-MQMQ] 2.3.1.2 / [MC-MQAC] <3>: the queue type GUID of report queues (MQ_QTYPE_REPORT).
REPORT_QUEUE_TYPE: Final = uuid.UUID("55ee8f32-cce9-11cf-b108-0020afd61ce9")
_VT_BSTR: Final = 8
#: What the warning of effects that could not be stored names (``QueueManager._drop_effects``).
ARRIVAL_EVENTS: Final = "arrival events"
RECEIPTS: Final = "journal copies and acknowledgements of received messages"


def _requested(message: Message, msg_class: int) -> bool:
    """True when ``message.ack`` asks for an acknowledgement of ``msg_class``."""
    bit = ACK_CLASSES.get(msg_class)
    if bit is None:
        bit = _NEG_RECEIVE if msg_class & 0xC000 == 0xC000 else _NEG_ARRIVAL
    return bool(message.ack & bit)


class Effects(Batch):
    """Side effects built before the write that makes their cause durable, to go in that write.

    A receive's ACK_RECEIVE and journal copies, a send's ACK_REACH_QUEUE, trace report and source
    journal copy, a commit's acknowledgements: stored in a second write after their cause, a process
    killed between the two kept the cause and lost them (outside QA, 2026-11-27: 11 kills in 160).
    Built into an ``Effects``, their rows join the cause's batch, and the messages they deliver wait
    in their queues PENDING (unseen, as a transaction's sends) until ``show`` -- after the write --
    or ``drop`` when it failed.  Both under the queue manager's lock.
    """

    __slots__ = ("entries",)

    def __init__(self) -> None:
        super().__init__()
        #: The messages delivered, PENDING until ``show``.
        self.entries: list[tuple[QueueState, Entry]] = []

    def absorb(self, other: Batch) -> None:
        """Add ``other`` (its delivered messages too, when it is an ``Effects``)."""
        super().absorb(other)
        if isinstance(other, Effects):
            self.entries += other.entries

    def show(self) -> list[MessageKey]:
        """The write holding these effects is durable: their messages are in their queues.

        Returns the stored messages that went to a queue deleted while the write was under way
        (an admin queue, a journal): the caller deletes them, as the queue's deletion did the others
        ([MS-MQDMPR] 3.1.7.1.4); no open loads them, and nothing else would ever remove them.
        """
        woken: dict[int, QueueState] = {}
        orphans: list[MessageKey] = []
        for state, entry in self.entries:
            if state.deleted:
                if entry.durable:
                    orphans.append(MessageKey(state.queue_id, entry.lookup_id))
                continue
            index = state.index
            if index.get(entry.lookup_id) is entry and entry.state == PENDING:
                index.set_state(entry, AVAILABLE)
                woken[id(state)] = state
        self.entries = []
        for state in woken.values():
            state.cond.notify_all()
        return orphans

    def drop(self) -> int:
        """The write failed: the messages delivered are taken out of their queues; how many."""
        dropped = 0
        for state, entry in self.entries:
            index = state.index
            if index.get(entry.lookup_id) is entry:
                index.remove(entry)
                dropped += 1
        self.entries = []
        return dropped


class Lifecycle:
    """The lifecycle rules of one queue manager (internal; the module docstring lists them)."""

    def __init__(
        self,
        qm: QueueManager,
        timers: TimerHeap,
        send_insecure_nacks: bool = False,
        machine_journal_quota: int | None = None,
    ) -> None:
        self.qm = qm
        self.timers = timers
        self.send_insecure_nacks = send_insecure_nacks
        #: [MS-MQDMPR] 3.1.1.1 QueueManager JournalQuota (KB) over every journal; None = no limit.
        self.machine_journal_quota = machine_journal_quota

    # ------------------------------------------------------------------ timers
    def arm(self, state: QueueState, entry: Entry) -> None:
        """Start the TTBR timer of ``entry`` (application queues only)."""
        if entry.expires_at is not None and state.kind in _APP_KINDS:
            self.timers.push(entry.expires_at, state, entry)

    def run_due(self, now: float, batch: Batch) -> int:
        """Expire every Available message whose deadline is ``<= now``; returns how many."""
        expired = 0
        for state, entry, deadline in self.timers.pop_due(now):
            if entry.expires_at != deadline:
                self.timers.stale = max(0, self.timers.stale - 1)
                continue
            if state.deleted:
                continue
            index = state.subqueues.get(entry.subqueue) if entry.subqueue else state.index
            if index is None or index.get(entry.lookup_id) is not entry:
                continue
            if entry.state != AVAILABLE:
                # [MC-MQAC] 3.1.6.1.1 step 1: Locked -> wait for the transaction.  Pending (not
                # yet committed / durable) -> re-checked when it becomes Available.
                continue
            index.remove(entry)
            if entry.durable:
                batch.delete.append(MessageKey(state.queue_id, entry.lookup_id))
            self.failed_in_queue(state, entry.message, NACK_RECEIVE_TIMEOUT, batch, expiry=True)
            expired += 1
        return expired

    def check_available(self, state: QueueState, entry: Entry) -> None:
        """An entry just became Available (commit, abort, durable send): re-arm if already due."""
        if entry.expires_at is not None and entry.expires_at <= self.qm._clock():
            self.arm(state, entry)

    # ------------------------------------------------------------------ arrival
    def arrived(self, state: QueueState, message: Message, batch: Batch) -> None:
        """A message reached application queue ``state`` (positive arrival events)."""
        if state.kind not in _APP_KINDS:
            return
        if message.ack & _POS_ARRIVAL and not message.msg_class & 0x8000:
            # (a negative acknowledgement -- a dead letter sent again, an imported one -- is not
            # acknowledged in turn, as on its receipt: outside QA, an imported dead-letter queue
            # sent ACK_REACH_QUEUE messages to the original senders' admin queues)
            self.send_ack(message, ACK_REACH_QUEUE, batch)
        if message.trace:
            self.trace_report(message, batch)
        if message.journal & _JOURNAL and message.transaction_id is None:
            # Source journaling of a non-transactional message: delivery confirmed on arrival.
            self.journal_copy(self.qm._system["JOURNAL"], message, batch)

    def has_arrival_events(self, state: QueueState, message: Message) -> bool:
        """True when ``message`` reaching ``state`` has events (``arrived`` builds them)."""
        if state.kind not in _APP_KINDS:
            return False
        return bool(
            (message.ack & _POS_ARRIVAL and not message.msg_class & 0x8000)
            or message.trace
            or (message.journal & _JOURNAL and message.transaction_id is None)
        )

    def undeliverable(self, message: Message, msg_class: int, batch: Batch) -> None:
        """A message could not reach its queue: NACK if NEG_ARRIVAL, dead-letter if MQMSG_DEADLETTER."""
        if message.msg_class & 0x8000:
            return  # already a dead letter / negative acknowledgement
        if _requested(message, msg_class):
            self.send_ack(message, msg_class, batch)
        if message.journal & _DEADLETTER:
            self.dead_letter(message, msg_class, message.transaction_id is not None, batch)

    # ------------------------------------------------------------------ removal
    def received(self, state: QueueState, entry: Entry, into: Batch | None = None) -> None:
        """``entry`` was received (Message Position Deleted, reason AckReceive).

        Its acknowledgement and journal copies are stored now, or added to ``into`` for the caller
        to store with others (one commit for a batch of receives, ``QueueManager._store_effects``).
        """
        self.left(entry)
        message = entry.message
        if self.has_receipt(state, message):
            # The receive is durable already: a failure to store these must not fail it.
            self.qm._effects(
                lambda batch: self.receipt(state, message, batch),
                "journal copies and acknowledgements of a received message",
                into,
            )

    def left(self, entry: Entry) -> None:
        """``entry`` left its queue for good: its TTBR timer is stale."""
        if entry.expires_at is not None:
            self.timers.removed(entry)

    def has_receipt(self, state: QueueState, message: Message) -> bool:
        """True when receiving ``message`` from ``state`` has effects (``receipt`` builds them)."""
        if state.kind not in _APP_KINDS:
            return False
        if state.props.journal and state.journal is not None:
            return True  # every message received, a negative acknowledgement or a dead letter too
        return not message.msg_class & 0x8000 and bool(
            message.ack & _POS_RECEIVE or (message.journal & _JOURNAL and message.transaction_id is not None)
        )

    def receipt(self, state: QueueState, message: Message, batch: Batch) -> None:
        """Build the effects of ``message`` received from ``state`` into ``batch``: ACK_RECEIVE if
        POS_RECEIVE, the queue journal's copy, the machine journal's for a transactional message
        sent with MQMSG_JOURNAL (call when ``has_receipt``).

        The queue's journal takes every message received from it ([MC-MQAC] 2.2.2.4 MQ_JOURNAL:
        "received messages copied to the queue's journal queue"), a negative acknowledgement or a
        dead letter too; such a message (class bit 0x8000) received is not the receive of the
        message it speaks of: no ACK_RECEIVE for it, no source journal copy.
        """
        journal = state.journal if state.props.journal else None
        if journal is not None:
            self.journal_copy(journal, message, batch)
        if message.msg_class & 0x8000:
            return
        if message.ack & _POS_RECEIVE:
            self.send_ack(message, ACK_RECEIVE, batch)
        if message.journal & _JOURNAL and message.transaction_id is not None:
            # Transactional source journaling happens on the positive FinalAck (= the receive).
            self.journal_copy(self.qm._system["JOURNAL"], message, batch)

    def removed(self, state: QueueState, entry: Entry, msg_class: int, batch: Batch) -> None:
        """``entry`` left its queue unreceived (purge, queue deletion)."""
        self.left(entry)
        if state.kind not in _APP_KINDS:
            return
        self.failed_in_queue(state, entry.message, msg_class, batch)

    def rejected(self, state: QueueState, message: Message, batch: Batch) -> None:
        """``message``, marked rejected, was received from ``state`` in a committed transaction:
        MQMSG_CLASS_NACK_RECEIVE_REJECTED if NEG_RECEIVE, dead-lettered as a removal is."""
        if state.kind in _APP_KINDS:
            self.failed_in_queue(state, message, NACK_RECEIVE_REJECTED, batch)

    def failed_in_queue(
        self, state: QueueState, message: Message, msg_class: int, batch: Batch, expiry: bool = False
    ) -> None:
        """Negative receive outcome of a message that was in ``state``."""
        # A negative acknowledgement (a dead letter sent again, an imported one) is not acknowledged
        # in turn; it is still dead-lettered when it asks to be (dead-letter queues arm no timers,
        # so it does not come back; deleting it outright lost it).
        if _requested(message, msg_class) and not message.msg_class & 0x8000:
            self.send_ack(message, msg_class, batch)
        if not message.journal & _DEADLETTER:
            return
        if message.msg_class & 0x8000:
            # A dead letter moved on (an application dead-letter queue purged or deleted) keeps
            # the reason it died for: its class, not the purge's.
            msg_class = message.msg_class
        local = message.source_machine_guid == self.qm.guid
        if state.transactional:
            # Transactional: dead-lettered by the source QM (negative FinalAck) -> only when local.
            if local:
                self.dead_letter(message, msg_class, True, batch, leaving=state)
        elif expiry:
            # [MC-MQAC] 3.1.6.1.1 step 2: a non-transactional expired JN message -> DLQ.
            self.dead_letter(message, msg_class, False, batch, leaving=state)

    # ------------------------------------------------------------------ moves and copies
    def dead_letter(
        self,
        message: Message,
        msg_class: int,
        transactional: bool,
        batch: Batch,
        leaving: QueueState | None = None,
    ) -> None:
        """Put a copy of ``message`` with class ``msg_class`` into its dead-letter queue.

        Its own dead-letter queue when that names a local application queue other than ``leaving``
        (the queue the message is removed from: purging an application dead-letter queue put its
        messages straight back, and deleting it lost them), not deleted and with room under its
        quota for the copy; else the system one (which has no quota of its own).
        """
        qm = self.qm
        target = None
        if message.dead_letter_queue:
            try:
                state, subqueue = qm._resolve(message.dead_letter_queue)
            except MSMQError:
                state, subqueue = None, None
            if (
                state is not None
                and subqueue is None
                and state.kind in _APP_KINDS
                and state is not leaving
                and not state.deleted
                and state.fits_quota(message_size(message))
            ):
                target = state
        if target is None:
            target = qm._system["DEADXACT" if transactional else "DEADLETTER"]
        m = message.copy()
        m.msg_class = msg_class
        self.deliver(target, m, batch, keep_arrival=True)

    def journal_copy(self, journal: QueueState, message: Message, batch: Batch) -> bool:
        """Copy ``message`` into ``journal`` unless a journal quota or the machine quota would be
        exceeded: "If the journal or computer quota is exceeded, Message Queuing will not send
        copies of the messages to the journal" (PROPID_Q_JOURNAL_QUOTA; journals count in the
        machine quota: a copy over it left every later send refused, outside QA)."""
        qm = self.qm
        size = message_size(message)
        if not journal.fits_quota(size):
            return False
        if qm.machine_quota is not None and qm.total_bytes + size > qm.machine_quota * 1024:
            return False
        limit = self.machine_journal_quota
        if limit is not None:
            used = sum(s.total_bytes() for s in qm._by_id.values() if s.kind == "journal")
            used += qm._system["JOURNAL"].total_bytes()
            if used + size > limit * 1024:
                return False
        self.deliver(journal, message.copy(), batch, keep_arrival=True)
        return True

    def deliver(self, state: QueueState, m: Message, batch: Batch, keep_arrival: bool = False) -> Entry:
        """Enqueue ``m`` (already a private copy) into ``state`` as Available, no timers.

        Into an ``Effects``, it waits PENDING until the write holding it is durable (``show``).
        """
        qm = self.qm
        if not keep_arrival or m.arrived_time is None:
            m.arrived_time = qm._clock()
        m.lookup_id = qm._next_lookup(state)
        size = message_size(m)
        effects = batch if isinstance(batch, Effects) else None
        entry = Entry(
            m.lookup_id, m.priority, m, size, AVAILABLE if effects is None else PENDING, m.delivery == 1, None
        )
        state.index.add(entry)
        if entry.durable:
            batch.insert.append(qm._stored(state, entry))
        if effects is None:
            state.cond.notify_all()
        else:
            effects.entries.append((state, entry))
        return entry

    # ------------------------------------------------------------------ acknowledgements
    def new_message(self, **fields: object) -> Message:
        """A queue-manager generated message with id, source and sent time set."""
        qm = self.qm
        m = Message(**fields)  # type: ignore[arg-type]
        m.id = ObjectId(qm.guid, qm._next_ordinal())
        m.source_machine_guid = qm.guid
        m.sent_time = qm._clock()
        return m

    def send_ack(self, original: Message, msg_class: int, batch: Batch) -> bool:
        """[MS-MQQB] 3.1.7.15 Send Administration Acknowledgment; False when discarded."""
        admin = original.admin_queue
        if not admin or (msg_class in _INSECURE and not self.send_insecure_nacks):
            return False
        targets = self.admin_queues(admin)
        if not targets:
            return False
        body = b"" if msg_class in _NO_BODY else original.body
        ack = self.new_message(
            msg_class=msg_class,
            correlation_id=original.id,
            label=original.label,
            body=body,
            body_type=original.body_type if body else 0,
            delivery=original.delivery,
            priority=original.priority,
            response_queue=original.destination_queue,
            # "PROPID_M_APPSPECIFIC ... Same as original message", and PROPID_M_EXTENSION (MSMQ's
            # "Acknowledgment Message Properties"; [MS-MQQB] 3.1.7.15 is silent): an ack carried 0
            # and no extension (outside QA, 2026-11-27).
            app_specific=original.app_specific,
            extension=original.extension,
        )
        size = len(body) + 2 * len(ack.label) + len(ack.extension)
        sent = False
        for state in targets:
            try:
                self.qm._check_quota(state, size)
            except MSMQError:
                continue
            copy = ack if len(targets) == 1 else ack.copy()
            copy.destination_queue = state.format_name
            self.deliver(state, copy, batch)
            sent = True
        return sent

    def admin_queues(self, admin: str) -> list[QueueState]:
        """The queues an acknowledgement to ``admin`` goes to: the local non-transactional
        application queues it names, one per queue.

        A multiple-element name names several ("A multiple-element format name can be constructed
        to ... specify multiple administration queues for sending acknowledgment messages", MSMQ's
        "Multiple-Element Format Names"): each local one gets a copy of the one acknowledgement (its
        id, with ``destination_queue`` that copy's queue, as PROPID_M_DEST_QUEUE of a message sent
        to several); an element that names no such queue here is skipped, as a single one is.
        """
        qm = self.qm
        try:
            names = name_elements(admin)
        except MSMQError:
            return []
        targets: dict[int, QueueState] = {}
        for name in names[:MAX_NAME_ELEMENTS]:  # (a send refuses more: a stored message may not)
            try:
                state, subqueue = qm._resolve(name)
            except MSMQError:
                continue
            if subqueue is None and state.kind in _APP_KINDS and not state.transactional:
                targets.setdefault(id(state), state)
        return list(targets.values())

    # ------------------------------------------------------------------ tracing
    def report_queue(self) -> QueueState | None:
        """The local report queue: a public queue of type MQ_QTYPE_REPORT (or label MQReport Queue)."""
        for state in self.qm._queues.values():
            if state.kind == "public" and not state.deleted:
                props = state.props
                if props.service_type_guid == REPORT_QUEUE_TYPE or props.label == "MQReport Queue":
                    return state
        return None

    def trace_report(self, message: Message, batch: Batch) -> bool:
        """[MS-MQQB] 1.3.6 / 3.1.5.8.9: an express REPORT message about ``message`` reaching us."""
        target = self.report_queue()
        if target is None:
            return False
        qm = self.qm
        msg_id = message.id.uniquifier if message.id is not None else 0
        stamp = time.strftime("%I:%M:%S %p %a,%b %d %y", time.gmtime(qm._clock()))
        label = f"{qm.guid.hex[:4]}:{msg_id:08x}:00 received by {qm.guid} at {stamp}"
        body = (
            f"<MESSAGE ID>{msg_id:08x}</MESSAGE ID>\r\n"
            f"<TARGET QUEUE>{message.destination_queue or ''}</TARGET QUEUE>\r\n"
        ).encode("utf-16-le")
        report = self.new_message(msg_class=REPORT, label=label[:249], body=body, body_type=_VT_BSTR)
        report.correlation_id = message.id
        report.destination_queue = target.format_name
        self.deliver(target, report, batch)
        return True
