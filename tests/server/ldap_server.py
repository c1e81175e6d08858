"""A private OpenLDAP server (Debian's slapd) on 127.0.0.1 for the tests: its own slapd.conf, database folder and
users, loaded with slapadd before it starts. The system's slapd configuration is never read or changed."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SUFFIX = "dc=metastore,dc=test"
PEOPLE = f"ou=people,{SUFFIX}"


def slapd_available() -> bool:
    """True when slapd and its tools are installed (Debian: slapd, ldap-utils)."""
    return all(Path(f"/usr/sbin/{p}").exists() for p in ("slapd", "slapadd", "slappasswd")) \
        and Path("/etc/ldap/schema/core.schema").exists()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LdapServer:
    workdir: Path
    port: int
    tls: bool = False  # ldaps://
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"{'ldaps' if self.tls else 'ldap'}://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_slapd(workdir: Path, users: dict[str, str], tls: tuple[Path, Path] | None = None,
                starttls: bool = False) -> LdapServer:
    """Start slapd on a free 127.0.0.1 port with `users` (uid -> password) under ou=people,dc=metastore,dc=test;
    with `tls` (certificate, key: PEM) it speaks ldaps:// only, or with `starttls` too ldap:// where it refuses
    simple binds until the connection is upgraded with StartTLS."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "db").mkdir(exist_ok=True)
    conf = workdir / "slapd.conf"
    conf.write_text(
        f"""include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {workdir / 'slapd.pid'}
{f"TLSCertificateFile {tls[0]}{chr(10)}TLSCertificateKeyFile {tls[1]}" if tls else ""}
{"security simple_bind=128" if starttls else ""}
database mdb
maxsize 10485760
suffix "{SUFFIX}"
rootdn "cn=admin,{SUFFIX}"
directory {workdir / 'db'}
access to attrs=userPassword by anonymous auth by * none
access to * by * read
"""
    )
    entries = [
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: metastore\no: metastore tests\n",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n",
    ]
    for uid, password in users.items():
        hashed = subprocess.run(["/usr/sbin/slappasswd", "-s", password], capture_output=True, text=True,
                                check=True, timeout=30).stdout.strip()
        entries.append(
            f"dn: uid={uid},{PEOPLE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid}\n"
            f"userPassword: {hashed}\n"
        )
    ldif = workdir / "data.ldif"
    ldif.write_text("\n".join(entries))
    subprocess.run(["/usr/sbin/slapadd", "-f", str(conf), "-l", str(ldif)], check=True, capture_output=True,
                   timeout=60)
    port = _free_port()
    if starttls and tls is None:
        raise ValueError("StartTLS needs a certificate and key")
    server = LdapServer(workdir=workdir, port=port, tls=tls is not None and not starttls)
    # -d 0: stay in the foreground (the test owns the process), log nothing.
    server.process = subprocess.Popen(
        [shutil.which("slapd") or "/usr/sbin/slapd", "-f", str(conf), "-h", f"{server.url}/", "-d", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            err = server.process.stderr.read().decode() if server.process.stderr else ""
            raise RuntimeError(f"slapd exited with {server.process.returncode}: {err[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("slapd did not listen within 20 s")
