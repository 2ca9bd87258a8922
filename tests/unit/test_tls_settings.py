"""TLS settings as the mysql client names them: parsed, checked together, resolved per transport, and turned into
the connector's options (issue 28)."""

from __future__ import annotations

import pytest

from tunebench.core.errors import ConfigError, EngineError
from tunebench.core.results import tls_text
from tunebench.core.target import ConnParams, Target, check_ssl_mode, parse_target_url
from tunebench.load.sysbench import check_sysbench_tls, sysbench_tls
from tunebench.mysql.target import conn_params


def test_modes_and_their_defaults():
    assert check_ssl_mode("verify-ca") == "VERIFY_CA" and check_ssl_mode(None) is None
    with pytest.raises(ConfigError, match="unknown ssl-mode 'sometimes'"):
        check_ssl_mode("sometimes")
    remote = Target("prod", host="db1", port=3306)
    assert remote.effective_ssl_mode("tcp") == "PREFERRED"  # as the mysql client
    assert Target("sandbox", host="127.0.0.1", port=1).effective_ssl_mode("tcp") == "DISABLED"  # says so in the run
    assert Target("sandbox:mysql-9.7.4", host="127.0.0.1", port=1).effective_ssl_mode("tcp+tls") == "REQUIRED"
    strict = Target("x", host="h", port=1, ssl_mode="VERIFY_IDENTITY", ssl_ca="/ca.pem")
    assert strict.effective_ssl_mode("tcp+tls") == "VERIFY_IDENTITY"  # never weakened


def test_settings_that_do_not_go_together():
    for target, what in ((Target("x", host="h", ssl_mode="VERIFY_CA"), "needs --ssl-ca"),
                         (Target("x", host="h", ssl_cert="/c.pem"), "go together"),
                         (Target("x", host="h", ssl_mode="DISABLED", ssl_ca="/ca.pem"), "DISABLED with certificates")):
        with pytest.raises(ConfigError, match=what):
            target.check_tls()


def test_urls_carry_tls_options():
    t = parse_target_url("mysql://bench@db1:3307/app?ssl-mode=verify_ca&ssl-ca=/etc/ca.pem")
    assert (t.ssl_mode, t.ssl_ca, t.port) == ("VERIFY_CA", "/etc/ca.pem", 3307)
    with pytest.raises(ConfigError, match="unknown option 'sslmode'"):
        parse_target_url("mysql://bench@db1/?sslmode=required")
    with pytest.raises(ConfigError, match="needs --ssl-ca"):
        parse_target_url("mysql://bench@db1/?ssl-mode=VERIFY_IDENTITY")
    assert parse_target_url("mysql://bench@db1/?ssl-mode=DISABLED&get-server-public-key=1").get_server_public_key
    assert not parse_target_url("mysql://bench@db1/").get_server_public_key
    with pytest.raises(ConfigError, match="get-server-public-key='yes please'"):
        parse_target_url("mysql://bench@db1/?get-server-public-key=yes%20please")


def test_the_public_key_option_is_kept_with_the_target(tmp_path):
    from tunebench.store.repo import Store

    store = Store(tmp_path / "s.sqlite")
    store.save_target(Target("db1", host="db1", port=3306, user="bench", ssl_mode="DISABLED",
                             get_server_public_key=True))
    store.save_target(Target("db2", host="db2", port=3306, user="bench"))
    assert store.get_target("db1").get_server_public_key and not store.get_target("db2").get_server_public_key


def test_the_password_is_encrypted_with_the_servers_key_and_nonce():
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    from tunebench.mysql.rsa_auth import encrypt_password

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    nonce = bytes(range(1, 21))
    sealed = encrypt_password("p w\"é", nonce, pem)
    clear = key.decrypt(sealed, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
    assert bytes(b ^ nonce[i % 20] for i, b in enumerate(clear)) == "p w\"é".encode() + b"\x00"


def test_the_rsa_exchange_refuses_a_malformed_key_and_a_too_long_password_in_one_line():
    """A malformed key and a password over ~214 bytes raised ValueError tracebacks (issue 43 item 18): now the
    connector's own InterfaceError, one line, saying what to do."""
    import mysql.connector
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from tunebench.mysql.rsa_auth import encrypt_password

    nonce = bytes(range(1, 21))
    with pytest.raises(mysql.connector.InterfaceError, match="cannot be read"):
        encrypt_password("pw", nonce, b"-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
    with pytest.raises(mysql.connector.InterfaceError, match="cannot be read"):
        encrypt_password("pw", nonce, b"\x00\x01garbage")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert encrypt_password("x" * 213, nonce, pem)  # 213 + NUL: the most a 2048-bit key carries
    with pytest.raises(mysql.connector.InterfaceError, match=r"214 bytes\) is longer .*\(213 bytes at most\): "
                                                             "connect with TLS"):
        encrypt_password("x" * 214, nonce, pem)


def test_connector_options_per_mode(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    base: dict = {"user": "u", "password": "", "host": "h", "port": 1}
    assert ConnParams(**base).connector_tls() == {"ssl_disabled": True}
    assert ConnParams(**base, ssl_mode="PREFERRED").connector_tls() == {"ssl_disabled": False}
    assert ConnParams(**base, ssl_mode="VERIFY_IDENTITY", ssl_ca=str(ca)).connector_tls() == {
        "ssl_disabled": False, "ssl_ca": str(ca), "ssl_verify_cert": True, "ssl_verify_identity": True}
    # a socket is secure of its own: no TLS there, whatever the target's mode
    sock = Target("x", socket="/tmp/s.sock", host="h", port=1, ssl_mode="REQUIRED")
    assert conn_params(sock, "socket", password="").ssl_mode == "DISABLED"
    assert conn_params(sock, "tcp", password="").tls_required
    missing = Target("x", host="h", port=1, ssl_mode="VERIFY_CA", ssl_ca=str(tmp_path / "nope.pem"))
    with pytest.raises(ConfigError, match=r"--ssl-ca .*nope\.pem: cannot read it"):
        conn_params(missing, "tcp", password="")


def test_sysbench_uses_tls_only_with_its_three_files(tmp_path):
    base: dict = {"user": "u", "password": "", "host": "h", "port": 1}
    assert not sysbench_tls(ConnParams(**base, ssl_mode="PREFERRED"))
    assert "run without TLS" in (check_sysbench_tls(ConnParams(**base, ssl_mode="PREFERRED")) or "")
    with pytest.raises(EngineError, match="needs --ssl-ca, --ssl-cert and --ssl-key"):
        check_sysbench_tls(ConnParams(**base, ssl_mode="REQUIRED"))
    full = ConnParams(**base, ssl_mode="VERIFY_CA", ssl_ca="/a", ssl_cert="/b", ssl_key="/c")
    assert sysbench_tls(full) and check_sysbench_tls(full) is None


def test_what_a_session_says_of_its_connections():
    assert tls_text({"mode": "PREFERRED", "tls": True, "version": "TLSv1.3", "cipher": "TLS_AES_128_GCM_SHA256"}) == \
        "TLSv1.3 (TLS_AES_128_GCM_SHA256), ssl-mode PREFERRED"
    assert tls_text({"mode": "PREFERRED", "tls": False}) == "plain TCP, no TLS (ssl-mode PREFERRED)"
    assert tls_text({"mode": "socket"}) == "UNIX socket (no TLS)"
    assert tls_text(None) == ""


def test_a_client_key_that_is_not_the_certificates_is_one_line_before_any_driver(tmp_path):
    """A wrong client key: the C library printed its own "[ERROR] SSL error" line before Tunebench's, which blamed
    the CA (issue 43 item 18). Now conn_params says which file is wrong, before any connection."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    def key_file(path):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        return key

    k1, _k2 = key_file(tmp_path / "k1.pem"), key_file(tmp_path / "k2.pem")
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(k1.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(k1, hashes.SHA256()))
    (tmp_path / "c1.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def target(key):
        return Target("t", host="127.0.0.1", port=1, user="u", ssl_mode="REQUIRED",
                      ssl_cert=str(tmp_path / "c1.pem"), ssl_key=str(tmp_path / key))
    assert conn_params(target("k1.pem"), "tcp", password="").ssl_key == str(tmp_path / "k1.pem")
    with pytest.raises(ConfigError, match=r"--ssl-key .*k2\.pem is not the key of --ssl-cert .*c1\.pem"):
        conn_params(target("k2.pem"), "tcp", password="")
    with pytest.raises(ConfigError, match=r"c1\.pem is not a private key in PEM form"):
        conn_params(target("c1.pem"), "tcp", password="")
