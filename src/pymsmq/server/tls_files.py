"""The TLS certificate and key of ``pymsmq serve --tls-cert/--tls-key``, loaded again into the
listening socket's context when they change (``watched_files``; the server looks once a second):
a renewed certificate is used by the handshakes after it, without a restart; connections already
open keep the one they were made with.  A pair that does not load (a key written before its
certificate, a bad file) is logged and the certificate in force stays; it is tried again at the
next change."""

from __future__ import annotations

import _ssl
import logging
import ssl
import time
from typing import Final

from pymsmq.server.watched_files import WatchedFiles

__all__ = ["CertificateFiles", "check_validity"]

log = logging.getLogger("pymsmq.server")


class CertificateFiles:
    """``cert`` and ``key`` (PEM), loaded into ``context`` now and by ``reload_if_changed``."""

    def __init__(self, cert: str, key: str, context: ssl.SSLContext) -> None:
        self.cert = cert
        self.key = key
        self.context = context
        self._files = WatchedFiles(cert, key)
        self._files.mark()
        context.load_cert_chain(cert, key)
        check_validity(cert, time.time())

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed; True if a new certificate is in force."""
        if not self._files.changed():
            return False
        try:
            # Tried on a context of its own first: a pair that fails (a key that does not match
            # its certificate) can leave a context without a certificate on some OpenSSL versions.
            # No passphrase prompt: OpenSSL would ask on the terminal and the whole server would
            # wait there (a key that needs one is refused; it is asked for at start only).
            probe = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            probe.load_cert_chain(self.cert, self.key, password=_no_passphrase)
            self.context.load_cert_chain(self.cert, self.key, password=_no_passphrase)
        except (OSError, ssl.SSLError) as exc:
            log.error(
                "the changed TLS certificate %s or key is not used (%s): the one in force stays",
                self.cert,
                exc,
            )
            return False
        log.warning("TLS certificate loaded again from %s: new connections use it", self.cert)
        check_validity(self.cert, time.time())
        return True


#: A certificate that expires within this many seconds is warned about when it is loaded.
EXPIRY_WARNING: Final = 14 * 86400


def check_validity(cert: str, now: float) -> None:
    """Log an error when the certificate in PEM file ``cert`` has expired or is not valid yet, a
    warning when it expires within ``EXPIRY_WARNING`` (outside QA: an expired certificate was put
    in force silently, and clients were told to look at their CA).  Where the interpreter cannot
    read a certificate's dates, nothing is said."""
    decode = getattr(_ssl, "_test_decode_cert", None)  # (CPython's; no public API reads a PEM's dates)
    try:
        info = decode(cert) if decode is not None else None
        not_before = ssl.cert_time_to_seconds(info["notBefore"]) if info else None
        not_after = ssl.cert_time_to_seconds(info["notAfter"]) if info else None
    except (OSError, ValueError, KeyError, TypeError, ssl.SSLError):
        return
    if not_before is None or not_after is None:
        return
    until = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(not_after))
    if now >= not_after:
        log.error(
            "the TLS certificate %s expired on %s: TLS clients refuse it (renew it: it is read again)",
            cert,
            until,
        )
    elif now < not_before:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(not_before))
        log.error(
            "the TLS certificate %s is not valid before %s: TLS clients refuse it until then", cert, since
        )
    elif not_after - now < EXPIRY_WARNING:
        log.warning(
            "the TLS certificate %s expires on %s: renew it (it is read again when it changes)", cert, until
        )


def _no_passphrase() -> bytes:
    raise ssl.SSLError("the key is protected by a passphrase, which a reload cannot ask for")
