"""Where a target's password comes from, and the connection parameters made with it.

Passwords are resolved at connect time from a client option file, $MYSQL_PWD, the keyring,
~/.my.cnf [client], or a prompt; they are never stored in SQLite or printed.
"""

from __future__ import annotations

import configparser
import contextlib
import functools
import getpass
import os
import ssl
import sys
from pathlib import Path

# The plain data lives in core/target.py (store and load use it without speaking SQL).
from tunebench.core.errors import ConfigError
from tunebench.core.target import ConnParams, Target

KEYRING_SERVICE = "tunebench"


def read_option_file_password(path: Path, section: str = "client") -> str | None:
    parser = configparser.ConfigParser(allow_no_value=True, strict=False, interpolation=None)
    try:
        lines = [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("!")]
        parser.read_string("\n".join(lines))
    except (OSError, configparser.Error):
        return None
    if not parser.has_section(section):
        return None
    value = parser.get(section, "password", fallback=None)
    if value is None:
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


def keyring_backend_name() -> str:
    try:
        import keyring

        backend = keyring.get_keyring()
    except Exception as exc:  # keyring raises many kinds when no backend works
        return f"unavailable ({exc.__class__.__name__})"
    return f"{backend.__class__.__module__}.{backend.__class__.__name__}"


def _keyring_password(target: Target) -> str | None:
    try:
        import keyring

        return keyring.get_password(KEYRING_SERVICE, f"{target.user}@{target.address()}")
    except Exception:  # no usable backend on a headless box is normal, not an error
        return None


# Passwords typed into the GUI for this process only: never written anywhere.
_SESSION_PASSWORDS: dict[str, str] = {}


def remember_password(target: Target, password: str) -> None:
    _SESSION_PASSWORDS[f"{target.user}@{target.address()}"] = password


def save_to_keyring(target: Target, password: str) -> str | None:
    """Store the password in the system keyring; None when done, else why not (no usable backend...)."""
    try:
        import keyring
        from keyring.errors import KeyringError

        keyring.set_password(KEYRING_SERVICE, f"{target.user}@{target.address()}", password)
    except (ImportError, KeyringError, RuntimeError) as exc:
        return f"the keyring could not store it ({exc.__class__.__name__}: {exc})"
    return None


def typed_password(target: Target) -> str | None:
    return _SESSION_PASSWORDS.get(f"{target.user}@{target.address()}")


def resolve_password(target: Target, prompt: bool = True) -> str:
    typed = _SESSION_PASSWORDS.get(f"{target.user}@{target.address()}")
    if typed is not None:
        return typed
    if target.password_file:
        pw = read_option_file_password(Path(target.password_file))
        if pw is not None:
            return pw
    env = os.environ.get("MYSQL_PWD")
    if env is not None:
        return env
    pw = _keyring_password(target)
    if pw is not None:
        return pw
    pw = read_option_file_password(Path.home() / ".my.cnf")
    if pw is not None:
        return pw
    if prompt and sys.stdin is not None and sys.stdin.isatty():
        with contextlib.suppress(EOFError, KeyboardInterrupt):
            return getpass.getpass(f"Password for {target.user}@{target.address()}: ")
    return ""


def _check_key_pair(name: str, cert: str, key: str) -> None:
    """A client certificate and its key that do not go together (or a key that is no key) are one line here,
    before any driver tries them: the C libraries printed their own "[ERROR] SSL error" line first, and the
    message blamed the CA (issue 43 item 18)."""
    try:
        stamp = (os.stat(cert).st_mtime_ns, os.stat(key).st_mtime_ns)
    except OSError:
        return  # said by the reads above
    why = _key_pair_problem(cert, key, stamp)
    if why:
        raise ConfigError(f"target {name}: --ssl-key {key} {why}")


@functools.lru_cache(maxsize=32)
def _key_pair_problem(cert: str, key: str, _stamp: tuple[int, int]) -> str | None:
    def no_passphrase() -> str:
        raise ValueError("encrypted")

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        ctx.load_cert_chain(cert, key, password=no_passphrase)
    except ValueError:
        return "is encrypted (a passphrase): the drivers cannot use it; give an unencrypted key"
    except ssl.SSLError as exc:
        text = str(exc)
        if "KEY_VALUES_MISMATCH" in text or "key values mismatch" in text:
            return f"is not the key of --ssl-cert {cert}"
        if "PEM" in text or "NO_START_LINE" in text or "no start line" in text:
            return f"is not a private key in PEM form, or --ssl-cert {cert} is not a certificate"
        return f"with --ssl-cert {cert}: {exc.reason or text}"
    return None


def conn_params(target: Target, transport: str | None = None, database: str | None = None,
                password: str | None = None) -> ConnParams:
    transport = transport or target.default_transport()
    target.check_transport(transport)
    target.check_tls()
    if transport == "socket":  # a secure transport of its own: no TLS there, as the mysql client
        pw = resolve_password(target) if password is None else password
        return ConnParams(user=target.user, password=pw, socket=target.socket, database=database)
    mode = target.effective_ssl_mode(transport)
    files = {"ssl_ca": target.ssl_ca, "ssl_cert": target.ssl_cert, "ssl_key": target.ssl_key} \
        if mode != "DISABLED" else {}
    for option, path in files.items():
        if path:
            try:
                with open(path, "rb") as f:
                    f.read(1)
            except OSError as exc:
                raise ConfigError(f"target {target.name}: --{option.replace('_', '-')} {path}: cannot read it "
                                  f"({exc.strerror})") from None
    if files.get("ssl_cert") and files.get("ssl_key"):
        _check_key_pair(target.name, str(files["ssl_cert"]), str(files["ssl_key"]))
    pw = resolve_password(target) if password is None else password
    return ConnParams(user=target.user, password=pw, host=target.host, port=target.port, database=database,
                      ssl_mode=mode, get_server_public_key=target.get_server_public_key,
                      **{k: (os.path.abspath(v) if v else None) for k, v in files.items()})
