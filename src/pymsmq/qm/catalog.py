"""Queue creation, deletion, opening and properties of ``QueueManager`` ([MS-MQDMPR] 3.1.7.1.3-3.1.7.1.5).

A mixin of ``pymsmq.qm.queue_manager.QueueManager`` (split out of that module; ``QueueManager`` is its
only subclass): the public queue CRUD methods.  Everything runs under the queue manager's lock.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, cast

from pymsmq.errors import FormatNameError, MSMQError, quoted
from pymsmq.hresult import HResult
from pymsmq.model.constants import INFINITE, MQ_SEND_ACCESS
from pymsmq.model.names import QueuePath
from pymsmq.model.queue_properties import QueueProperties, check_base_priority, check_settable
from pymsmq.model.queue_statistics import QueueStatistics, kinds_of
from pymsmq.qm.index import PENDING
from pymsmq.qm.lifecycle import NACK_Q_DELETED
from pymsmq.qm.statistics import queue_statistics
from pymsmq.qm.store.base import Batch, QueueRow

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable

    from pymsmq.qm.lifecycle import Lifecycle
    from pymsmq.qm.queue import Queue
    from pymsmq.qm.queue_manager import QueueManager
    from pymsmq.qm.queue_state import QueueState

__all__ = ["QueueCatalog"]


class QueueCatalog:
    """``create_queue``, ``delete_queue``, ``queue``, ``queue_exists``, queue properties and listings."""

    if TYPE_CHECKING:  # provided by QueueManager
        _lock: threading.RLock
        _clock: Callable[[], float]
        _life: Lifecycle
        _queues: dict[str, QueueState]
        _by_id: dict[int, QueueState]
        _by_number: dict[int, QueueState]

        def _check_open(self) -> None: ...
        def _is_local(self, computer: str) -> bool: ...
        def _resolve(self, name: str) -> tuple[QueueState, str | None]: ...
        def _apply(self, batch: Batch) -> None: ...
        def _create_state(
            self, kind: str, tail: str, name: str, props: QueueProperties, batch: Batch, number: int = 0
        ) -> QueueState: ...

    def create_queue(
        self,
        path: str,
        *,
        transactional: bool = False,
        journal: bool = False,
        label: str = "",
        quota: int = INFINITE,
        journal_quota: int = INFINITE,
        base_priority: int = 0,
        authenticate: bool = False,
        priv_level: int = 1,
        multicast_address: str | None = None,
        service_type_guid: uuid.UUID | str | None = None,
    ) -> Queue:
        """Create a queue ([MS-MQDMPR] 3.1.7.1.3) and return a handle on it.

        Errors: MQ_ERROR_ILLEGAL_QUEUE_PATHNAME (bad path, subqueue, system path, remote private
        queue), MQ_ERROR_QUEUE_EXISTS, MQ_ERROR_ILLEGAL_PROPERTY_VALUE (a bad property).
        """
        parsed = QueuePath.parse(path)
        if parsed.subqueue is not None:
            raise FormatNameError(
                f"{quoted(path)}: subqueues exist implicitly, they are not created",
                HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME,
            )
        if parsed.kind == "system":
            raise FormatNameError(
                f"{quoted(path)}: system queues cannot be created", HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME
            )
        if not self._is_local(parsed.computer):
            raise FormatNameError(
                f"{quoted(path)}: queues are created on the local computer only",
                HResult.MQ_ERROR_ILLEGAL_QUEUE_PATHNAME,
            )
        check_base_priority(base_priority)  # even where it is then ignored (a private queue)
        props = QueueProperties(
            label=label,
            service_type_guid=service_type_guid or uuid.UUID(int=0),  # type: ignore[arg-type]
            journal=journal,
            quota=quota,
            journal_quota=journal_quota,
            # [MS-MQMQ] 2.3.1.6: base priority applies to public queues only (0 for private ones).
            base_priority=base_priority if parsed.kind == "public" else 0,
            transactional=transactional,
            authenticate=authenticate,
            priv_level=priv_level,
            multicast_address=multicast_address,
        )
        batch = Batch()
        with self._lock:
            self._check_open()
            if parsed.key in self._queues:
                raise MSMQError(f"queue {quoted(path)} already exists", HResult.MQ_ERROR_QUEUE_EXISTS)
            middle = "private$\\" if parsed.kind == "private" else ""
            state = self._create_state(parsed.kind, middle + parsed.name, parsed.name, props, batch)
            try:
                self._apply(batch)
            except BaseException:
                self._forget(state)
                raise
            return self._handle(state, None)

    def _forget(self, state: QueueState) -> None:
        state.deleted = True
        state.detach_bytes()
        if state.journal is not None:
            state.journal.detach_bytes()
        self._queues.pop(state.key, None)
        self._by_id.pop(state.queue_id, None)
        if self._by_number.get(state.number) is state:
            del self._by_number[state.number]
        if state.journal is not None:
            state.journal.deleted = True
            self._by_id.pop(state.journal.queue_id, None)

    def delete_queue(self, name: str) -> None:
        """Delete a queue, its journal and its messages ([MS-MQDMPR] 3.1.7.1.4).

        Open handles then fail with MQ_ERROR_QUEUE_DELETED; blocked readers wake with it.
        """
        with self._lock:
            self._check_open()
            state, subqueue = self._resolve(name)
            if subqueue is not None or state.kind not in ("private", "public"):
                raise MSMQError(f"{quoted(name)} cannot be deleted", HResult.MQ_ERROR_ACCESS_DENIED)
            batch = Batch(delete_queues=[state.queue_id])
            if state.journal is not None:
                batch.delete_queues.append(state.journal.queue_id)
            # [MS-MQDMPR] 3.1.7.1.4: every message is deleted with reason NackQueueDeleted.
            for index in (state.index, *state.subqueues.values()):
                for entry in index:
                    if entry.state != PENDING:
                        self._life.removed(state, entry, NACK_Q_DELETED, batch)
            self._apply(batch)
            self._forget(state)
            for s in (state, state.journal):
                if s is not None:
                    s.cond.recheck()

    def queue(self, name: str, access: int | None = None, share_mode: int = 0) -> Queue:
        """A handle on the queue a path name or format name names (MQ_ERROR_QUEUE_NOT_FOUND if none).

        A multiple-element format name opened with MQ_SEND_ACCESS gives a ``MultipleDestination``,
        which sends a copy of each message to every queue it names (``qm.multiple_destination``).

        ``access`` is an MQ_*_ACCESS value (``None``: send, peek and receive); ``share_mode`` is
        MQ_DENY_NONE or MQ_DENY_RECEIVE_SHARE ([MS-MQDMPR] 3.1.7.1.5 Open Queue sharing rules).
        """
        with self._lock:
            self._check_open()
            if isinstance(name, str) and "," in name:
                # A multiple-element format name ([MS-MQMQ] 2.1.7): a handle that sends to each queue.
                from pymsmq.qm.multiple_destination import open_multiple

                return open_multiple(cast("QueueManager", self), name, access, share_mode)
            state, subqueue = self._resolve(name)
            if access == MQ_SEND_ACCESS and (state.kind in ("system", "journal") or subqueue is not None):
                # [MS-MQDMPR] 3.1.7.1.5 Open Queue: a machine format name (the dead-letter queues,
                # the machine journal) cannot be opened with SendAccess; nor a subqueue (MQOpenQueue:
                # "A subqueue cannot be opened using this access mode") or a queue journal, which
                # take no sends either (outside QA: the open succeeded and every send failed).
                what = "a subqueue" if subqueue is not None else "a journal or a machine queue"
                raise MSMQError(
                    f"{quoted(name)} is {what}: it cannot be opened to send",
                    HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION,
                )
            return self._handle(state, subqueue, access, share_mode)

    def _handle(
        self, state: QueueState, subqueue: str | None, access: int | None = None, share: int = 0
    ) -> Queue:
        from pymsmq.qm.queue import Queue

        return Queue._open(cast("QueueManager", self), state, subqueue, access, share)

    def queue_exists(self, name: str) -> bool:
        """True when ``name`` names an existing queue of this queue manager."""
        with self._lock:
            try:
                self._resolve(name)
            except MSMQError:
                return False
            return True

    def get_queue_properties(self, name: str) -> QueueProperties:
        """The properties of a queue (MQ_ERROR_QUEUE_NOT_FOUND if it does not exist)."""
        with self._lock:
            self._check_open()
            return self._resolve(name)[0].props

    def set_queue_properties(self, name: str, **changes: object) -> QueueProperties:
        """Change settable properties (label, quota, journal, ...); updates ``modify_time``.

        Properties fixed at creation (transactional, path name, ...) raise
        MQ_ERROR_PROPERTY_NOTALLOWED; bad values MQ_ERROR_ILLEGAL_PROPERTY_VALUE.
        """
        check_settable(changes)
        with self._lock:
            self._check_open()
            state, subqueue = self._resolve(name)
            if state.kind not in ("private", "public") or subqueue is not None:
                # MQSetQueueProperties: "You cannot set the queue properties of a journal,
                # dead-letter, or connector queue" (MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION); a
                # subqueue has no properties of its own ([MS-MQMQ] 2.1: its queue's).
                raise MSMQError(
                    f"{quoted(name)}: the properties of a journal, a system queue or a subqueue cannot be "
                    "set (a journal's and a subqueue's are their queue's)",
                    HResult.MQ_ERROR_UNSUPPORTED_FORMATNAME_OPERATION,
                )
            if state.kind != "public" and "base_priority" in changes:
                # [MS-MQMQ] 2.3.1.6: "setting it on a private queue is silently ignored" (a value
                # that is no base priority at all is refused first, as the wire would refuse it).
                check_base_priority(changes["base_priority"])
                changes = {k: v for k, v in changes.items() if k != "base_priority"}
            props = state.props.replace(**changes, modify_time=int(self._clock()))
            batch = Batch(upsert_queues=[QueueRow(state.queue_id, props.path_name, {})])
            old = state.props
            state.props = props
            batch.upsert_queues[0] = state.row()
            journal = state.journal
            if journal is not None and props.journal_quota != old.journal_quota:
                journal.props = journal.props.replace(quota=props.journal_quota)
                batch.upsert_queues.append(journal.row())
            try:
                self._apply(batch)
            except BaseException:
                state.props = old
                if journal is not None:
                    journal.props = journal.props.replace(quota=old.journal_quota)
                raise
            return props

    @property
    def private_queues(self) -> list[str]:
        """Path names of the application's private queues ([MC-MQAC] MSMQApplication.PrivateQueues)."""
        with self._lock:
            return sorted(s.props.path_name for s in self._queues.values() if s.kind == "private")

    @property
    def public_queues(self) -> list[str]:
        """Path names of the locally registered public queues."""
        with self._lock:
            return sorted(s.props.path_name for s in self._queues.values() if s.kind == "public")

    def queue_statistics(self, which: str = "application") -> list[QueueStatistics]:
        """The management facts of every private and public queue (``which``: "application",
        "private" or "public"), in ``private_queues`` then ``public_queues`` order: path and format
        names, messages, bytes (with the subqueues'), journal messages, subqueues that hold
        messages, label, journal setting ([MS-MQMQ] 2.3.12, what MQMgmtGetInfo gives per queue).
        One request to a server for all of them; system queues are handles
        (``dead_letter_queue``...)."""
        paths: list[str] = []
        for kind in kinds_of(which):
            paths += self.private_queues if kind == "private" else self.public_queues
        return queue_statistics(cast("QueueManager", self), paths)
