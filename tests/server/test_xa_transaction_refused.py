"""MQ_XA_TRANSACTION in an XACT field is refused with MQ_ERROR_TRANSACTION_IMPORT on every op that
takes one (outside QA, 2026-11-27: it was read as "no transaction", so a receive removed the message
and a rollback of the caller's XA transaction could not give it back).  Raw requests: the pymsmq
client refuses XA itself and never sends it, another language's client may."""

from __future__ import annotations

import pytest
from _pymsmq_server import ThreadServer

from pymsmq import Message, MSMQError, connect
from pymsmq.client.remote_transaction import _xact
from pymsmq.hresult import HResult
from pymsmq.protocol import messages as pm
from pymsmq.protocol.batch_ops import ReceiveManyRequest, SendManyRequest, encode_messages
from pymsmq.protocol.message_codec import encode_message

XA = 2


def test_every_op_with_a_transaction_refuses_xa_and_the_messages_stay(server: ThreadServer) -> None:
    with connect(server.url) as qm:
        for transactional in (False, True):
            q = qm.create_queue(rf".\private$\xa{int(transactional)}", transactional=transactional)
            q.send(Message(body=b"kept", delivery=1), transaction=3 if transactional else None)
            packet, props = encode_message(Message(body=b"x"))
            t = qm._t
            requests: list[pm.Request] = [
                pm.SendRequest(q._handle, packet, XA, props),
                SendManyRequest(q._handle, XA, encode_messages([(packet, props)])),
                pm.ReceiveRequest(q._handle, 0, 0, 0, 0, XA, 0, ()),
                ReceiveManyRequest(q._handle, 10, 0, transaction=XA),
            ]
            for request in requests:
                with pytest.raises(MSMQError) as caught:
                    t.call(request)
                assert caught.value.hresult == HResult.MQ_ERROR_TRANSACTION_IMPORT, request
            assert [m.body for m in q.receive_many(10, timeout=0)] == [b"kept"]
        # The client refuses it before sending anything.
        with pytest.raises(MSMQError) as caught:
            _xact(qm, XA)
        assert caught.value.hresult == HResult.MQ_ERROR_TRANSACTION_IMPORT
