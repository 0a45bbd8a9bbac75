"""The TLS certificate and key of ``pymsmq serve --tls-cert/--tls-key``, loaded again into the
listening socket's context when they change (``watched_files``; the server looks once a second):
a renewed certificate is used by the handshakes after it, without a restart; connections already
open keep the one they were made with.  A pair that does not load (a key written before its
certificate, a bad file) is logged and the certificate in force stays; it is tried again at the
next change."""

from __future__ import annotations

import logging
import ssl

from pymsmq.server.watched_files import WatchedFiles

__all__ = ["CertificateFiles"]

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
        return True


def _no_passphrase() -> bytes:
    raise ssl.SSLError("the key is protected by a passphrase, which a reload cannot ask for")
