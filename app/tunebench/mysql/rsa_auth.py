"""caching_sha2_password over plain TCP through the server's RSA public key (`--get-server-public-key`, the mysql
client's name). mysql-connector-python cannot do it (its plugin sends the password in clear or refuses; its C
extension does not expose MYSQL_OPT_GET_SERVER_PUBLIC_KEY), so this connection uses the connector's pure-Python
protocol with a plugin that does the exchange as the protocol describes it:

    server: 0x01 0x04 (full authentication)  -> client: 0x02 (request the public key)
    server: 0x01 <PEM public key>            -> client: RSA-OAEP(password + NUL, XOR the 20-byte nonce)

A successful full authentication also fills the server's caching_sha2 cache, so later connections of the same
account (the C extension's, the compiled loop's) log in through the fast path without TLS or RSA.
Like the mysql client with this option, the key is taken from the server unverified: TLS is the safe choice."""

from __future__ import annotations

from typing import Any

import mysql.connector
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from mysql.connector.connection import MySQLConnection
from mysql.connector.plugins import caching_sha2_password as _sha2

AUTH_NEEDS_SECURE = 2061  # CR_AUTH_PLUGIN_ERR: caching_sha2_password's full authentication over plain TCP
PLUGIN_CLASS = "TunebenchRsaCachingSha2Password"
REQUEST_PUBLIC_KEY = b"\x02"
FULL_AUTHENTICATION = 4


def encrypt_password(password: str, nonce: bytes, pem: bytes) -> bytes:
    """The password (NUL-terminated, XOR the nonce repeated) encrypted with the server's key, OAEP padding
    (MySQL 8.0.5 and later)."""
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError, UnsupportedAlgorithm):  # (a traceback before: issue 43 item 18)
        raise mysql.connector.InterfaceError("caching_sha2_password: the server's RSA public key cannot be read "
                                             "(not a PEM public key)") from None
    if not isinstance(key, rsa.RSAPublicKey):
        raise mysql.connector.InterfaceError("the server's public key is not an RSA key")
    clear = password.encode() + b"\x00"
    mixed = bytes(b ^ nonce[i % len(nonce)] for i, b in enumerate(clear))
    most = key.key_size // 8 - 2 * hashes.SHA1.digest_size - 2  # what OAEP with SHA-1 carries
    if len(mixed) > most:
        raise mysql.connector.InterfaceError(
            f"caching_sha2_password: the password ({len(clear) - 1} bytes) is longer than the server's "
            f"{key.key_size}-bit RSA key can carry ({most - 1} bytes at most): connect with TLS instead")
    return key.encrypt(mixed, padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(),
                                           label=None))


class RsaCachingSha2Password(_sha2.MySQLCachingSHA2PasswordAuthPlugin):
    """The connector's plugin, plus the public-key exchange when the connection has no TLS."""

    _nonce: bytes = b""

    def auth_response(self, auth_data: bytes, **kwargs: Any) -> bytes | None:
        if auth_data and len(auth_data) > 1:
            self._nonce = auth_data[:20]  # the handshake's scramble (an auth switch adds a trailing NUL)
        return super().auth_response(auth_data, **kwargs)

    def auth_more_response(self, sock: Any, auth_data: bytes, **kwargs: Any) -> bytes:
        if self.ssl_enabled or not auth_data or auth_data[0] != FULL_AUTHENTICATION:
            return super().auth_more_response(sock, auth_data, **kwargs)
        if not self._nonce:
            raise mysql.connector.InterfaceError("caching_sha2_password: no nonce from the server")
        sock.send(REQUEST_PUBLIC_KEY)
        pkt = bytes(sock.recv())
        if len(pkt) < 6 or pkt[4] != 1 or b"PUBLIC KEY" not in pkt:
            raise mysql.connector.InterfaceError("caching_sha2_password: the server sent no RSA public key "
                                                 "(caching_sha2_password_public_key_path)")
        sock.send(encrypt_password(self._password, self._nonce, pkt[5:]))
        return bytes(sock.recv())


setattr(_sha2, PLUGIN_CLASS, RsaCachingSha2Password)  # get_auth_plugin looks the class up in the plugin's module


def rsa_connection(**kwargs: Any) -> Any:
    """A pure-Python connector connection whose caching_sha2_password exchange may use the server's public key.
    Other plugins (mysql_native_password, …) are the connector's own: the class is looked up per plugin."""
    kwargs = {k: v for k, v in kwargs.items() if k != "use_pure"}
    conn = MySQLConnection()
    conn._auth_plugin_class = PLUGIN_CLASS
    conn.connect(**kwargs)
    return conn
