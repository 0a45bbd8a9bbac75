"""LIST_QUEUES_PAGE (protocol version 4): listings larger than one frame, a page at a time, in
case-insensitive path name order; the client's listings use it, and LIST_QUEUES with a server of
version 3 (LIST_QUEUES alone overflowed a frame at about 18,000 queues of 110-character names)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer

import pymsmq.server.ops as ops
import pymsmq.server.session as session
from pymsmq import Message, MSMQError
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.protocol import messages as pm
from pymsmq.protocol.handshake import choose_version

NAMES = [f".\\private$\\{'Q' if i % 2 else 'q'}-{i:03d}-{'x' * (i % 40)}" for i in range(60)]


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops, "LIST_PAGE_BUDGET", 1500)  # a few queues a page


@pytest.fixture
def client(tmp_path: Path, small_pages: None) -> Iterator[Any]:
    server = ThreadServer(tmp_path / "qm").start()
    c = connect(server.url)
    for i, name in enumerate(NAMES):
        q = c.create_queue(name, label=f"label {i}")
        for _ in range(i % 3):
            q.send(Message(body=b"m"))
    yield c
    c.close()
    server.stop()


def _pages(
    c: Any, which: int = 1, propids: tuple[int, ...] = (), max_count: int = 0, after: str = ""
) -> list[Any]:
    pages = []
    while True:
        page = c._t.call(pm.ListQueuesPageRequest(which, propids, after, max_count))
        pages.append(page)
        if not page.more:
            return pages
        after = page.names[-1]


def test_pages_cover_every_queue_once_in_case_insensitive_order(client: Any) -> None:
    assert client._t.server_hello.version == 5
    pages = _pages(client, propids=(7,))
    assert len(pages) > 2 and all(p.names for p in pages)
    names = [n for p in pages for n in p.names]
    assert len(names) == len(set(names)) == len(NAMES)
    assert names == sorted(names, key=str.casefold)
    assert [n.casefold().rsplit("\\", 1)[1] for n in names] == sorted(
        n.casefold().rsplit("\\", 1)[1] for n in NAMES
    )
    counts = {
        n.rsplit("\\", 1)[1]: dict(props)[7].value
        for p in pages
        for n, props in zip(p.names, p.properties, strict=True)
    }
    assert counts == {n.rsplit("\\", 1)[1]: i % 3 for i, n in enumerate(NAMES)}


def test_the_client_lists_past_one_page(client: Any) -> None:
    assert len(client.private_queues) == len(NAMES)
    stats = client.queue_statistics("private")
    assert len(stats) == len(NAMES)
    by_label = {s.label: s.message_count for s in stats}
    assert by_label == {f"label {i}": i % 3 for i in range(len(NAMES))}


def test_max_count_and_after(client: Any) -> None:
    first = client._t.call(pm.ListQueuesPageRequest(1, (), "", 7))
    assert len(first.names) == 7 and first.more == 1
    nxt = client._t.call(pm.ListQueuesPageRequest(1, (), first.names[-1].upper(), 7))  # any case
    assert nxt.names[0].casefold() > first.names[-1].casefold() and len(nxt.names) == 7
    last = client._t.call(pm.ListQueuesPageRequest(1, (), "\uffff", 0))
    assert (last.names, last.more) == ((), 0)
    with pytest.raises(MSMQError) as err:
        client._t.call(pm.ListQueuesPageRequest(9, (), "", 0))
    assert err.value.hresult == HResult.MQ_ERROR_INVALID_PARAMETER


def test_queues_deleted_and_created_between_pages(client: Any) -> None:
    first = client._t.call(pm.ListQueuesPageRequest(1, (), "", 10))
    client.delete_queue(first.names[3])  # before the cursor: no effect on the rest
    client.delete_queue(NAMES[59])  # after it: not listed
    client.create_queue(".\\private$\\zzz-new")  # after it: listed
    rest = [n for p in _pages(client, max_count=10, after=first.names[-1]) for n in p.names]
    # The pages after ``first`` start past its last name whatever changed before it.
    assert all(n.casefold() > first.names[-1].casefold() for n in rest)
    names = list(first.names) + rest
    assert len(names) == len(set(names)) == len(NAMES)  # one deleted, one created
    assert any(n.endswith("zzz-new") for n in names)
    assert not any(n.casefold().endswith(NAMES[59].casefold().rsplit("\\", 1)[1]) for n in names[10:])


def test_a_server_of_version_3_is_listed_with_list_queues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_pages: None
) -> None:
    monkeypatch.setattr(session, "choose_version", lambda hello: choose_version(hello, (1, 2, 3)))
    server = ThreadServer(tmp_path / "qm").start()
    try:
        c = connect(server.url)
        assert c._t.server_hello.version == 3
        for name in NAMES[:20]:
            c.create_queue(name)
        assert len(c.private_queues) == 20  # one LIST_QUEUES: the page budget does not apply
        assert len(c.queue_statistics("private")) == 20
        c.close()
    finally:
        server.stop()
