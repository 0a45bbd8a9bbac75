"""TLS on the client protocol (``--tls-cert``/``--tls-key``, ``msmqs://``): stdlib ``ssl`` both ways.

A throwaway CA from ``trustme`` signs the server's certificate.  A client that trusts that CA talks to
the server as over plain TCP; a plain client, or a TLS client that does not trust the CA, is turned
away with MQ_ERROR_SERVICE_NOT_AVAILABLE and the server goes on serving.
"""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "client"))

from _pymsmq_server import ThreadServer, each_event_loop  # noqa: F401 (every test on both loops)
from _serve_process import SERVE, env

from pymsmq import Message, MSMQError
from pymsmq.cli import main
from pymsmq.client import connect
from pymsmq.hresult import HResult
from pymsmq.server import AccessPolicy, ServerConfig

TOKEN = "tls-token"
Q = r".\private$\tls"


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def cert_files(ca: trustme.CA, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(server certificate chain, its key, the CA certificate) as PEM files."""
    cert = ca.issue_cert("127.0.0.1", "localhost")
    chain, key, ca_pem = tmp_path / "chain.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.private_key_pem.write_to_path(str(key))
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    ca.cert_pem.write_to_path(str(ca_pem))
    return chain, key, ca_pem


@pytest.fixture
def server(tmp_path: Path, cert_files: tuple[Path, Path, Path]) -> Iterator[ThreadServer]:
    chain, key, _ = cert_files
    config = ServerConfig(
        port=0, policy=AccessPolicy.single_token(TOKEN), tls_cert=str(chain), tls_key=str(key)
    )
    s = ThreadServer(tmp_path / "qm", config).start()
    yield s
    s.stop()


def _trusting(ca: trustme.CA) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    return ctx


def test_a_client_that_trusts_the_ca_works_as_over_tcp(server: ThreadServer, ca: trustme.CA) -> None:
    client = connect(f"msmqs://127.0.0.1:{server.port}", token=TOKEN, tls=_trusting(ca))
    q = client.create_queue(Q)
    q.send(Message(body=b"over tls", delivery=1))
    q.send_many([Message(body=b"%d" % i) for i in range(300)])
    assert q.receive(timeout=1).body == b"over tls"
    assert len(q.receive_many(500)) == 300
    client.close()


def test_untrusted_and_plain_clients_are_turned_away(server: ThreadServer, ca: trustme.CA) -> None:
    with pytest.raises(MSMQError) as untrusted:  # the system's CAs do not know this one
        connect(f"msmqs://127.0.0.1:{server.port}", token=TOKEN, timeout=5)
    assert untrusted.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    assert "TLS handshake failed" in str(untrusted.value) and "SSL_CERT_FILE" in str(untrusted.value)
    with pytest.raises(MSMQError) as plain:  # no TLS at all
        connect(f"msmq://127.0.0.1:{server.port}", token=TOKEN, timeout=5)
    assert plain.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    assert "a TLS server? use msmqs://" in str(plain.value)
    # A wrong token over a good TLS connection is refused as over TCP.
    with pytest.raises(MSMQError) as wrong:
        connect(f"msmqs://127.0.0.1:{server.port}", token="nope", tls=_trusting(ca))
    assert wrong.value.hresult == HResult.MQ_ERROR_ACCESS_DENIED
    good = connect(f"msmqs://127.0.0.1:{server.port}", token=TOKEN, tls=_trusting(ca))
    assert good.ping(b"still serving") == b"still serving"
    good.close()


def test_the_command_line_reaches_a_tls_server_trusting_a_ca_file(
    server: ThreadServer, cert_files: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/cli.md: msmqs:// in --url; a private CA is trusted through SSL_CERT_FILE (OpenSSL's own).
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_files[2]))
    url = f"msmqs://127.0.0.1:{server.port}"
    args = ["--url", url, "--token", TOKEN]
    r = CliRunner().invoke(main, ["queue", "create", Q, *args], env={"PYMSMQ_DATA": None})
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["send", Q, "hi", *args], env={"PYMSMQ_DATA": None})
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["receive", Q, "--body-only", *args], env={"PYMSMQ_DATA": None})
    assert r.exit_code == 0 and r.stdout_bytes == b"hi"


def test_serve_with_tls_tells_clients_to_use_msmqs(
    tmp_path: Path, cert_files: tuple[Path, Path, Path]
) -> None:
    chain, key, _ = cert_files
    tls = ["--tls-cert", str(chain), "--tls-key", str(key), "--token", TOKEN]
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "--data", str(tmp_path / "qm"), "--port", "0", *tls],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env(),
    )
    try:
        assert proc.stdout is not None
        port = re.search(r"client=127\.0\.0\.1:(\d+)", proc.stdout.readline())
        hint = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert port is not None
    assert f"pymsmq.connect('msmqs://127.0.0.1:{port.group(1)}')" in hint
    assert proc.returncode == 0


def _tls_server(tmp_path: Path, cert_files: tuple[Path, Path, Path], **limits: Any) -> ThreadServer:
    chain, key, _ = cert_files
    config = ServerConfig(
        port=0, policy=AccessPolicy.single_token(TOKEN), tls_cert=str(chain), tls_key=str(key), **limits
    )
    return ThreadServer(tmp_path / "qm", config).start()


def _open_sessions(server: ThreadServer, n: int) -> None:
    # Connections the server counts: sessions, and connections in their TLS handshake.
    deadline = time.monotonic() + 10
    s = server.server
    assert s is not None
    while len(s.sessions) + len(s.in_tls_handshake) != n:
        assert time.monotonic() < deadline, f"{len(s.sessions)} + {len(s.in_tls_handshake)}, expected {n}"
        time.sleep(0.01)


def test_connections_in_their_tls_handshake_do_not_keep_clients_out(
    tmp_path: Path, cert_files: tuple[Path, Path, Path], ca: trustme.CA
) -> None:
    # They counted against --max-connections, so sockets that never start TLS (reopened as the
    # handshake timeout drops them) kept every client with a token out.  Connections that have
    # not said hello now have a budget of their own; the limit counts authenticated ones.
    server = _tls_server(tmp_path, cert_files, max_connections=2, slow_timeout=1.0)
    url = f"msmqs://127.0.0.1:{server.port}"
    try:
        silent = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
        _open_sessions(server, 2)
        client = connect(url, token=TOKEN, tls=_trusting(ca))
        assert client.ping(b"in") == b"in"
        second = connect(url, token=TOKEN, tls=_trusting(ca))
        with pytest.raises(MSMQError) as refused:  # the limit of authenticated connections
            connect(url, token=TOKEN, tls=_trusting(ca))
        assert refused.value.hresult == HResult.MQ_ERROR_INSUFFICIENT_RESOURCES
        assert "too many connections" in str(refused.value)
        for sock in silent:
            sock.close()
        second.close()
        client.close()
    finally:
        server.stop()


def test_a_tls_handshake_that_never_comes_is_cut_after_the_slow_sender_timeout(
    tmp_path: Path, cert_files: tuple[Path, Path, Path], ca: trustme.CA
) -> None:
    server = _tls_server(tmp_path, cert_files, slow_timeout=0.5)
    try:
        silent = socket.create_connection(("127.0.0.1", server.port))
        silent.settimeout(10)
        started = time.monotonic()
        assert silent.recv(100) == b""  # closed by the server, no clear-text frame written
        assert time.monotonic() - started < 5
        silent.close()
        _open_sessions(server, 0)
        assert server.server is not None and server.server.stats.connections_open == 0
        client = connect(f"msmqs://127.0.0.1:{server.port}", token=TOKEN, tls=_trusting(ca))
        assert client.ping(b"ok") == b"ok"
        client.close()
    finally:
        server.stop()


def test_failed_tls_handshakes_are_logged(
    tmp_path: Path, cert_files: tuple[Path, Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    # asyncio logs them only in debug mode: clients that could not connect went unnoticed.
    server = _tls_server(tmp_path, cert_files, slow_timeout=0.5)
    try:
        with caplog.at_level("WARNING", logger="pymsmq.server"):
            for _ in range(2):
                plain = socket.create_connection(("127.0.0.1", server.port))
                plain.sendall(b"MQ this is not a TLS hello\r\n" * 4)
                plain.settimeout(10)
                with contextlib.suppress(OSError):
                    assert plain.recv(100) == b""
                plain.close()
            pattern = re.compile(r"(\d+) TLS handshakes? failed or did not finish within 0.5 s")
            deadline = time.monotonic() + 10
            while sum(int(n) for n in pattern.findall(caplog.text)) < 2:  # (one or two ticks)
                assert time.monotonic() < deadline, caplog.text
                time.sleep(0.05)
        assert sum(int(n) for n in pattern.findall(caplog.text)) == 2
    finally:
        server.stop()


def test_a_renewed_certificate_is_used_by_new_connections_without_a_restart(
    server: ThreadServer, ca: trustme.CA, cert_files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    # Certificates are renewed (often every 60-90 days): the files are replaced, the server loads
    # them again at its next look (once a second); connections already open keep theirs.
    chain, key, _ = cert_files
    url = f"msmqs://127.0.0.1:{server.port}"
    before = connect(url, token=TOKEN, tls=_trusting(ca))
    renewed_ca = trustme.CA()
    renewed = renewed_ca.issue_cert("127.0.0.1", "localhost")
    # The key first, then the certificate, each by a rename: in between the pair does not match.
    new_key, new_chain = tmp_path / "key.new", tmp_path / "chain.new"
    renewed.private_key_pem.write_to_path(str(new_key))
    new_key.replace(key)
    time.sleep(1.5)  # the mismatched pair is looked at, refused, and the old certificate stays
    assert connect(url, token=TOKEN, tls=_trusting(ca)).ping(b"old") == b"old"
    new_chain.write_bytes(b"".join(blob.bytes() for blob in renewed.cert_chain_pems))
    new_chain.replace(chain)
    deadline = time.monotonic() + 10
    while True:
        try:
            after = connect(url, token=TOKEN, tls=_trusting(renewed_ca), timeout=5)
            break
        except MSMQError:
            assert time.monotonic() < deadline, "the renewed certificate was not used"
            time.sleep(0.2)
    assert after.ping(b"new") == b"new"
    with pytest.raises(MSMQError) as old_ca:
        connect(url, token=TOKEN, tls=_trusting(ca), timeout=5)
    assert old_ca.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE
    assert before.ping(b"kept") == b"kept"
    before.close()
    after.close()


def test_a_tls_client_of_a_plain_server_is_told_to_use_msmq(tmp_path: Path) -> None:
    s = ThreadServer(tmp_path / "qm").start()
    try:
        with pytest.raises(MSMQError) as e:
            connect(f"msmqs://127.0.0.1:{s.port}", timeout=5)
        assert e.value.hresult == HResult.MQ_ERROR_SERVICE_NOT_AVAILABLE and "use msmq://" in str(e.value)
    finally:
        s.stop()


def test_a_renewed_key_with_a_passphrase_is_refused_without_a_prompt(
    server: ThreadServer,
    ca: trustme.CA,
    cert_files: tuple[Path, Path, Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # QA: OpenSSL asked for the passphrase on the terminal and the whole server waited there.
    from cryptography.hazmat.primitives import serialization

    chain, key, _ = cert_files
    renewed = trustme.CA().issue_cert("127.0.0.1")
    private = serialization.load_pem_private_key(renewed.private_key_pem.bytes(), password=None)
    locked = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    with caplog.at_level(logging.ERROR, logger="pymsmq.server"):
        (chain.parent / "chain.new").write_bytes(b"".join(blob.bytes() for blob in renewed.cert_chain_pems))
        (chain.parent / "key.new").write_bytes(locked)
        (chain.parent / "key.new").replace(key)
        (chain.parent / "chain.new").replace(chain)
        deadline = time.monotonic() + 10
        while "is not used" not in caplog.text:
            assert time.monotonic() < deadline, "the reload was not refused"
            time.sleep(0.1)
    client = connect(f"msmqs://127.0.0.1:{server.port}", token=TOKEN, tls=_trusting(ca), timeout=5)
    assert client.ping(b"old certificate") == b"old certificate"
    client.close()


@pytest.mark.parametrize(
    ("days_from_now", "level", "says"),
    [(-400, logging.ERROR, "expired on"), (5, logging.WARNING, "expires on"), (400, None, None)],
)
def test_a_certificate_out_of_date_or_about_to_be_is_said_at_start(
    ca: trustme.CA,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    days_from_now: int,
    level: int | None,
    says: str | None,
) -> None:
    # An expired certificate was put in force silently; clients were told to look at their CA
    # (outside QA).  The server says it when it loads one (at start and when it is renewed).
    import datetime as dt

    now = dt.datetime.now(dt.UTC)
    end = now + dt.timedelta(days=days_from_now)
    cert = ca.issue_cert("127.0.0.1", not_before=min(now, end) - dt.timedelta(days=30), not_after=end)
    chain, key = tmp_path / "chain.pem", tmp_path / "key.pem"
    cert.private_key_pem.write_to_path(str(key))
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    config = ServerConfig(
        port=0, policy=AccessPolicy.single_token(TOKEN), tls_cert=str(chain), tls_key=str(key)
    )
    with caplog.at_level(logging.INFO, logger="pymsmq.server"):
        s = ThreadServer(tmp_path / "qm", config).start()
        s.stop()
    said = [r for r in caplog.records if "TLS certificate" in r.getMessage() and str(chain) in r.getMessage()]
    if level is None:
        assert said == []
    else:
        assert [r.levelno for r in said] == [level] and says in said[0].getMessage()
