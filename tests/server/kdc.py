"""A private MIT Kerberos KDC on 127.0.0.1 for the tests: its own realm, database, krb5.conf and keytabs.

Debian's krb5-kdc and krb5-admin-server (kadmin.local) run against files in a temporary folder, chosen through
KRB5_CONFIG and KRB5_KDC_PROFILE; the system's /etc/krb5.conf and KDC (if any) are never touched. Clients in the
tests (our Python client, kinit, Java) use `env` / `krb5_conf` to find this KDC.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REALM = "METASTORE.TEST"


def kdc_available() -> bool:
    """True when the MIT KDC programs are installed (Debian: krb5-kdc, krb5-admin-server, krb5-user)."""
    return all(shutil.which(p) or Path(f"/usr/sbin/{p}").exists() for p in ("krb5kdc", "kdb5_util", "kadmin.local")) \
        and shutil.which("kinit") is not None


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Kdc:
    """A running krb5kdc and the files that describe it."""

    workdir: Path
    port: int
    realm: str = REALM
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def krb5_conf(self) -> Path:
        return self.workdir / "krb5.conf"

    @property
    def env(self) -> dict[str, str]:
        """Variables that point Kerberos libraries at this KDC (and at a ticket cache of the tests' own)."""
        return {
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.workdir / "kdc.conf"),
            "KRB5CCNAME": f"FILE:{self.workdir / 'ccache-default'}",
        }

    def run(self, *args: str, env: dict[str, str] | None = None, input_text: str | None = None) -> str:
        full_env = {**os.environ, **self.env, **(env or {})}
        out = subprocess.run(list(args), env=full_env, capture_output=True, text=True, timeout=60, input=input_text)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
        return out.stdout

    def add_principal(self, name: str, *, password: str | None = None) -> str:
        """Create `name` (without realm) with a random key, or with `password`; returns name@REALM."""
        if password is None:
            self.run(_sbin("kadmin.local"), "-q", f"addprinc -randkey {name}")
        else:
            self.run(_sbin("kadmin.local"), "-q", f"addprinc -pw {password} {name}")
        return f"{name}@{self.realm}"

    def keytab(self, name: str, path: Path) -> Path:
        """Write `name`'s keys into the keytab `path` (this re-keys the principal, as kadmin's ktadd does)."""
        self.run(_sbin("kadmin.local"), "-q", f"ktadd -k {path} {name}")
        return path

    def kinit(self, name: str, keytab: Path, ccache: Path) -> dict[str, str]:
        """Get `name`'s ticket from `keytab` into `ccache`; returns the environment a client needs to use it."""
        env = {"KRB5CCNAME": f"FILE:{ccache}"}
        self.run("kinit", "-k", "-t", str(keytab), f"{name}@{self.realm}", env=env)
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5CCNAME": f"FILE:{ccache}"}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_kdc(workdir: Path, realm: str = REALM) -> Kdc:
    """Create a realm's database in `workdir` and start its KDC on a free 127.0.0.1 port (TCP and UDP)."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    kdc = Kdc(workdir=workdir, port=port, realm=realm)
    (workdir / "kdc.conf").write_text(
        f"""[kdcdefaults]
    kdc_listen = 127.0.0.1:{port}
    kdc_tcp_listen = 127.0.0.1:{port}

[realms]
    {realm} = {{
        database_name = {workdir / 'principal'}
        key_stash_file = {workdir / 'stash'}
        acl_file = {workdir / 'kadm5.acl'}
        max_life = 1h
        max_renewable_life = 1d
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{workdir / 'kdc.log'}
"""
    )
    (workdir / "kadm5.acl").write_text("")
    # No DNS anywhere: the service host is the name the tests give (localhost), the KDC an address.
    kdc.krb5_conf.write_text(
        f"""[libdefaults]
    default_realm = {realm}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    rdns = false
    dns_canonicalize_hostname = false
    ignore_acceptor_hostname = false
    udp_preference_limit = 1
    default_ccache_name = FILE:{workdir / 'ccache-default'}

[realms]
    {realm} = {{
        kdc = 127.0.0.1:{port}
    }}

[domain_realm]
    localhost = {realm}
    .localhost = {realm}
"""
    )
    kdc.run(_sbin("kdb5_util"), "create", "-s", "-r", realm, "-P", "master-password-of-the-test-kdc")
    env = {**os.environ, "KRB5_CONFIG": str(kdc.krb5_conf), "KRB5_KDC_PROFILE": str(workdir / "kdc.conf")}
    kdc.process = subprocess.Popen(
        [_sbin("krb5kdc"), "-n", "-r", realm], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if kdc.process.poll() is not None:
            err = kdc.process.stderr.read().decode() if kdc.process.stderr else ""
            raise RuntimeError(f"krb5kdc exited with {kdc.process.returncode}: {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return kdc
        except OSError:
            time.sleep(0.1)
    kdc.stop()
    raise RuntimeError("krb5kdc did not listen within 20 s")
