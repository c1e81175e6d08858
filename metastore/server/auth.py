"""Who may connect: the authentication modes of `metastore serve` (Hive 4's metastore.authentication styles).

- `kerberos`: SASL GSSAPI with the service's keytab and principal (`metastore/_HOST@REALM`, _HOST replaced by the
  server's canonical host name, as Hadoop's SecurityUtil does);
- `config`: SASL PLAIN checked against a password file of salted scrypt hashes (`metastore passwd` writes it);
- `ldap`: SASL PLAIN checked by a simple bind to an LDAP server, as `uid=<user>,<base DN>` or a DN pattern, over
  ldaps:// or ldap:// with StartTLS (the server's certificate and host name verified against --ldap-ca or the
  system's CAs), or over plain ldap:// (the password in the clear: serve warns unless the server is on loopback).

PLAIN carries the password itself, so it is only offered over TLS. Nothing here logs or returns a password.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from metastore.server.sasl import GssapiServer, PasswordChecker, PlainServer, SecurityLayer, ServerMechanism

AUTHENTICATION_MODES = ("none", "kerberos", "config", "ldap")


class AuthConfigError(ValueError):
    """The authentication settings cannot work (the message names the setting, never a secret)."""


# ------------------------------------------------------------------ password file

# scrypt's cost: ~50 ms per check on one core, 16 MiB of memory.
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 1 << 14, 8, 1


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    """A password file entry's hash: `scrypt$N$r$p$salt$key` (salt and key in base64)."""
    salt = salt if salt is not None else os.urandom(16)
    key = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32)
    return "$".join(["scrypt", str(_SCRYPT_N), str(_SCRYPT_R), str(_SCRYPT_P),
                     base64.b64encode(salt).decode(), base64.b64encode(key).decode()])


def _verify_hash(encoded: str, password: str) -> bool:
    scheme, n, r, p, salt, key = encoded.split("$")
    expected = base64.b64decode(key)
    got = hashlib.scrypt(password.encode("utf-8"), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p),
                         dklen=len(expected), maxmem=256 * 1024 * 1024)
    return hmac.compare_digest(got, expected)


def parse_password_file(text: str, path: str) -> dict[str, str]:
    """`user:scrypt$...` lines (blank lines and # comments allowed) as user -> hash; errors name the line."""
    users: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, encoded = line.partition(":")
        parts = encoded.split("$")
        if not sep or not user or len(parts) != 6 or parts[0] != "scrypt":
            # The line may hold a password typed in by hand: say where, never what.
            raise AuthConfigError(f"password file {path} line {number}: expected user:scrypt$... "
                                  "(write entries with `metastore passwd`)")
        try:
            int(parts[1]), int(parts[2]), int(parts[3])
            base64.b64decode(parts[4], validate=True), base64.b64decode(parts[5], validate=True)
        except ValueError:
            raise AuthConfigError(f"password file {path} line {number}: malformed scrypt hash") from None
        users[user] = encoded
    return users


class PasswordFile:
    """User names and scrypt hashes from a file, re-read when the file changes (no restart to add a user)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._users: dict[str, str] = {}
        self._load()
        # Unknown users still cost one scrypt, so timing does not tell which names exist.
        self._dummy = hash_password("not a password", salt=b"metastore-dummy!")

    def _load(self) -> None:
        try:
            st = os.stat(self.path)
            text = Path(self.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthConfigError(f"cannot read the password file {self.path}: "
                                  f"{getattr(exc, 'strerror', None) or exc}") from None
        users = parse_password_file(text, self.path)
        with self._lock:
            self._users = users
            self._stamp = (st.st_mtime_ns, st.st_size)

    def _refresh(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            return  # keep the users we know rather than lock everyone out while the file is replaced
        if (st.st_mtime_ns, st.st_size) != self._stamp:
            try:
                self._load()
            except AuthConfigError:
                pass  # a half-written file: keep the previous users, try again on the next connection

    def check(self, user: str, password: str) -> str | None:
        """None when `password` is `user`'s, else why not."""
        self._refresh()
        with self._lock:
            encoded = self._users.get(user)
        if encoded is None:
            _verify_hash(self._dummy, password)
            return "unknown user or wrong password"
        return None if _verify_hash(encoded, password) else "unknown user or wrong password"


def write_password_entry(path: Path, user: str, password: str) -> bool:
    """Add or replace `user` in the password file `path` (created with mode 0600); True when it was new."""
    if not user or ":" in user or any(c.isspace() for c in user):
        raise AuthConfigError(f"user name {user!r} must be non-empty, without ':' or spaces")
    if not password:
        raise AuthConfigError("the password must not be empty")
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    entry = f"{user}:{hash_password(password)}"
    new = True
    for i, line in enumerate(lines):
        if line.split(":", 1)[0].strip() == user and not line.lstrip().startswith("#"):
            lines[i] = entry
            new = False
    if new:
        lines.append(entry)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return new


# ------------------------------------------------------------------ LDAP


@dataclass(frozen=True)
class LdapOptions:
    """Where to bind: the URL (ldap:// or ldaps://) and the user's DN from a base DN or a pattern with %s;
    `starttls` upgrades an ldap:// connection before the bind."""

    url: str
    base_dn: str = ""
    user_dn_pattern: str = ""
    timeout: float = 10.0
    ca_file: str = ""
    starttls: bool = False

    @property
    def uses_tls(self) -> bool:
        return self.url.lower().startswith("ldaps://") or self.starttls

    @property
    def sends_passwords_in_clear(self) -> bool:
        """True when bind passwords would cross a network unencrypted (plain ldap:// to a host beyond loopback)."""
        if self.uses_tls:
            return False
        host = urlsplit(self.url).hostname or ""
        if host.lower() == "localhost":
            return False
        try:
            return not ipaddress.ip_address(host).is_loopback
        except ValueError:
            return True  # a host name: it may resolve to anything


class LdapBind:
    """Checks a password with an LDAP simple bind as the user (Hive's LdapAuthenticationProviderImpl style)."""

    def __init__(self, options: LdapOptions) -> None:
        if not options.url.lower().startswith(("ldap://", "ldaps://")):
            raise AuthConfigError(f"--ldap-url {options.url!r} must start with ldap:// or ldaps://")
        if not options.base_dn and not options.user_dn_pattern:
            raise AuthConfigError("LDAP authentication needs --ldap-base-dn or --ldap-user-dn-pattern")
        if options.user_dn_pattern and options.user_dn_pattern.count("%s") != 1:
            raise AuthConfigError(f"--ldap-user-dn-pattern {options.user_dn_pattern!r} must contain %s once")
        if options.starttls and options.url.lower().startswith("ldaps://"):
            raise AuthConfigError(f"--ldap-starttls is for ldap:// URLs; {options.url} already speaks TLS")
        if options.ca_file:
            if not os.path.isfile(options.ca_file):
                raise AuthConfigError(f"--ldap-ca {options.ca_file} does not exist or is not a file")
            try:
                ssl.create_default_context(cafile=options.ca_file)
            except (ssl.SSLError, OSError) as exc:
                raise AuthConfigError(f"cannot load --ldap-ca {options.ca_file}: "
                                      f"{getattr(exc, 'strerror', None) or exc}") from None
        try:
            import ldap3  # noqa: F401 - optional dependency (the ldap extra)
        except ImportError:
            raise AuthConfigError("LDAP authentication needs the ldap3 package: pip install 'metastore[ldap]'") from None
        self.options = options

    def user_dn(self, user: str) -> str:
        """The DN to bind as, with the user name escaped so it cannot add RDNs of its own."""
        from ldap3.utils.dn import escape_rdn

        safe = escape_rdn(user)
        if self.options.user_dn_pattern:
            return self.options.user_dn_pattern.replace("%s", safe)
        return f"uid={safe},{self.options.base_dn}"

    def check(self, user: str, password: str) -> str | None:
        import ldap3
        from ldap3.core.exceptions import LDAPException

        if not password:
            # An empty password would be an unauthenticated bind, which LDAP servers accept for anyone.
            return "empty password"
        # Always a verifying Tls: ldap3's default for ldaps:// (Tls() with CERT_NONE) would accept any certificate.
        # No version: ldap3 then builds ssl.create_default_context, i.e. TLS 1.2+, the system's CAs when no
        # --ldap-ca is given, and it checks the host name itself after the handshake.
        tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=self.options.ca_file or None)
        server = ldap3.Server(self.options.url, connect_timeout=self.options.timeout, tls=tls, get_info=ldap3.NONE)
        conn = ldap3.Connection(server, user=self.user_dn(user), password=password, auto_bind=False,
                                receive_timeout=max(1, int(self.options.timeout)), raise_exceptions=False, read_only=True)
        try:
            if self.options.starttls:
                conn.open(read_server_info=False)
                # start_tls raises on a refused upgrade or an untrusted certificate; a False return (an error
                # result) must not fall through to a bind in the clear either.
                if not conn.start_tls(read_server_info=False):
                    result = conn.result or {}
                    return (f"LDAP server {self.options.url} refused StartTLS: "
                            f"{result.get('description', 'no reason given')}")
            if conn.bind():
                return None
            result = conn.result or {}
            return f"LDAP bind as {self.user_dn(user)!r} refused: {result.get('description', 'invalid credentials')}"
        except LDAPException as exc:
            return f"LDAP server {self.options.url} unavailable: {type(exc).__name__}: {exc}"
        finally:
            try:
                conn.unbind()
            except LDAPException:
                pass


# ------------------------------------------------------------------ Kerberos


def server_principal(pattern: str, bind_host: str) -> str:
    """`metastore/_HOST@REALM` with _HOST replaced by the canonical name of the host the server listens on
    (of this machine when it listens on every address), lower-cased, as Hadoop does."""
    if "_HOST" not in pattern:
        return pattern
    host = socket.getfqdn() if bind_host in ("", "0.0.0.0", "::") else socket.getfqdn(bind_host)
    return pattern.replace("_HOST", host.lower())


def kerberos_credentials(principal: str, keytab: str) -> Any:
    """The acceptor credentials of `principal` from `keytab` (the keytab must hold its keys)."""
    if not os.path.isfile(keytab):
        raise AuthConfigError(f"Kerberos keytab {keytab} does not exist or is not a file")
    if "@" not in principal or "/" not in principal.split("@", maxsplit=1)[0]:
        raise AuthConfigError(f"--kerberos-principal {principal!r} must be service/host@REALM, "
                              "e.g. metastore/_HOST@EXAMPLE.COM")
    try:
        import gssapi  # optional dependency (the kerberos extra)
    except ImportError:
        raise AuthConfigError("Kerberos needs the gssapi package: pip install 'metastore[kerberos]' "
                              "(Debian: libkrb5-dev to build it)") from None
    try:
        name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
        # MIT's acquire checks that the keytab holds keys of this principal: a wrong keytab fails here, at
        # start-up, not at the first client.
        creds = gssapi.Credentials(name=name, usage="accept", store={"keytab": keytab})
    except gssapi.exceptions.GSSError as exc:
        raise AuthConfigError(f"cannot use Kerberos principal {principal} from keytab {keytab}: "
                              f"{' '.join(str(exc.gen_message()).split())}") from None
    return creds


@dataclass(frozen=True)
class AuthOptions:
    """The authentication a worker runs on each new connection."""

    mode: str  # one of AUTHENTICATION_MODES except "none"
    timeout: float = 10.0
    kerberos_principal: str = ""
    kerberos_keytab: str = ""
    layers: frozenset[SecurityLayer] = frozenset({SecurityLayer.NONE})
    password_file: str = ""
    ldap: LdapOptions | None = None

    @property
    def mechanism(self) -> str:
        return "GSSAPI" if self.mode == "kerberos" else "PLAIN"


class Authenticator:
    """Per worker: the SASL mechanism factories of the configured mode (credentials loaded once)."""

    def __init__(self, options: AuthOptions) -> None:
        self.options = options
        self.mechanisms: dict[str, Callable[[], ServerMechanism]]
        if options.mode == "kerberos":
            creds = kerberos_credentials(options.kerberos_principal, options.kerberos_keytab)
            self.mechanisms = {"GSSAPI": lambda: GssapiServer(creds, options.layers)}
        elif options.mode in ("config", "ldap"):
            checker: PasswordChecker
            if options.mode == "config":
                checker = PasswordFile(options.password_file)
            else:
                assert options.ldap is not None
                checker = LdapBind(options.ldap)
            self.mechanisms = {"PLAIN": lambda: PlainServer(checker)}
        else:
            raise AuthConfigError(f"--authentication {options.mode!r} is not one of {', '.join(AUTHENTICATION_MODES)}")
