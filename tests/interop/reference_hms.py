"""Start and stop the reference Hive Metastore 2.3.10 that ships inside pyspark's jars.

The server runs as a JVM subprocess (`org.apache.hadoop.hive.metastore.HiveMetaStore`) on a loopback port, on an
embedded Derby database in a work folder or on a fresh PostgreSQL database. Facts this relies on are in
shared/research/reference-hms.md: the log4j2 context selector (without it the JVM dies at start), dbcp pooling
(BoneCP is not among pyspark's jars) and schema auto-creation.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from interop.thrift_probe import ProbeError, probe_thrift_server

POSTGRESQL_JDBC_JAR = Path("/usr/share/java/postgresql.jar")
HIVE_METASTORE_MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"
HIVE_VERSION = "2.3.10"


class ReferenceHmsUnavailable(RuntimeError):
    """Something the reference server needs (Java, pyspark's jars, the JDBC driver) is missing or it did not start."""


@dataclass(frozen=True)
class PostgresTarget:
    """A PostgreSQL database the reference server may own (it creates its schema there)."""

    host: str
    port: int
    database: str
    user: str
    password: str = ""

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"


@dataclass
class ReferenceHms:
    """A running reference Hive Metastore."""

    host: str
    port: int
    process: subprocess.Popen[bytes]
    workdir: Path
    backend: str

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def audit_log(self) -> Path:
        """Hive's log file; its `cmd=source:...` lines name every Thrift call the server served."""
        return self.workdir / "logs" / "hive.log"

    @property
    def console_log(self) -> Path:
        return self.workdir / "console.log"

    def served_calls(self) -> list[str]:
        """The Thrift method names the audit log recorded, in order (e.g. 'get_table', 'create_database')."""
        return parse_audit_calls(
            self.audit_log.read_text(errors="replace") if self.audit_log.exists() else ""
        )

    def stop(self) -> None:
        """Stop the JVM: SIGTERM, then SIGKILL if it does not exit within 20 s."""
        stop_process(self.process)


def parse_audit_calls(log_text: str) -> list[str]:
    """Method names from HiveMetaStore.audit lines such as `ugi=root ip=/127.0.0.1 cmd=source:/127.0.0.1 get_table : ...`."""
    calls = []
    for line in log_text.splitlines():
        marker = line.find("cmd=source:")
        if marker < 0:
            continue
        rest = line[marker + len("cmd=source:") :].split(None, 1)
        if len(rest) < 2:
            continue
        name = rest[1].split(None, 1)[0].rstrip(":")
        calls.append(name)
    return calls


def pyspark_jars_dir() -> Path:
    """The folder of jars inside the installed pyspark; raises ReferenceHmsUnavailable if pyspark is missing."""
    try:
        import pyspark
    except ImportError as exc:
        raise ReferenceHmsUnavailable(
            f"pyspark is not installed ({exc}); it carries the reference HMS jars"
        ) from exc
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    marker = jars / f"hive-metastore-{HIVE_VERSION}.jar"
    if not marker.exists():
        found = sorted(p.name for p in jars.glob("hive-metastore-*.jar"))
        raise ReferenceHmsUnavailable(
            f"{marker} not found (pyspark ships {found or 'no hive-metastore jar'})"
        )
    return jars


def java_executable() -> str:
    """The `java` to run; JAVA_HOME wins over PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise ReferenceHmsUnavailable(
            "java is not on PATH (the reference HMS needs Java 17: apt-get install openjdk-17-jre-headless)"
        )
    return found


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def write_hive_site(
    confdir: Path, warehouse: Path, derby_dir: Path | None, postgres: PostgresTarget | None
) -> Path:
    """Write hive-site.xml for an embedded Derby database (derby_dir) or a PostgreSQL database."""
    props: dict[str, str] = {
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(warehouse),
        "datanucleus.connectionPoolingType": "dbcp",
        # The aggregate-stats cache answers get_aggr_stats_for for a subset of partitions with a cached aggregate
        # of a superset (within hive.metastore.aggregate.stats.cache.max.variance); off, the answers are exact.
        "hive.metastore.aggregate.stats.cache.enabled": "false",
    }
    if postgres is not None:
        props.update(
            {
                "javax.jdo.option.ConnectionURL": postgres.jdbc_url,
                "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
                "javax.jdo.option.ConnectionUserName": postgres.user,
                "javax.jdo.option.ConnectionPassword": postgres.password,
            }
        )
    else:
        assert derby_dir is not None
        props["javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={derby_dir / 'metastore_db'};create=true"
        )
    body = "\n".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>" for k, v in props.items()
    )
    path = confdir / "hive-site.xml"
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}\n</configuration>\n')
    return path


def start_reference_hms(
    workdir: Path,
    *,
    postgres: PostgresTarget | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    timeout: float = 240.0,
    heap: str = "1g",
) -> ReferenceHms:
    """Start HMS 2.3.10 on Derby (default) or `postgres`, wait until it answers a Thrift call, return it.

    Raises ReferenceHmsUnavailable with the tail of the server's console if it exits or does not answer in time.
    """
    jars = pyspark_jars_dir()
    java = java_executable()
    classpath = [str(workdir / "conf")]
    if postgres is not None:
        if not POSTGRESQL_JDBC_JAR.exists():
            raise ReferenceHmsUnavailable(
                f"{POSTGRESQL_JDBC_JAR} is missing: install Debian's libpostgresql-jdbc-java for the PostgreSQL reference"
            )
        classpath.append(str(POSTGRESQL_JDBC_JAR))
    classpath.append(str(jars / "*"))

    workdir.mkdir(parents=True, exist_ok=True)
    for sub in ("conf", "warehouse", "logs", "tmp"):
        (workdir / sub).mkdir(exist_ok=True)
    write_hive_site(workdir / "conf", workdir / "warehouse", None if postgres else workdir, postgres)
    port = port or free_port(host)
    cmd = [
        java,
        f"-Xmx{heap}",
        "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
        f"-Dhive.log.dir={workdir / 'logs'}",
        "-Dhive.log.file=hive.log",
        f"-Djava.io.tmpdir={workdir / 'tmp'}",
        f"-Dderby.system.home={workdir}",
        "-cp",
        os.pathsep.join(classpath),
        HIVE_METASTORE_MAIN,
        "-p",
        str(port),
    ]
    env = dict(os.environ)
    # The server binds the wildcard address; hive.metastore.host would not exist in 2.3. Clients use loopback only.
    env.pop("HADOOP_CONF_DIR", None)
    console = open(workdir / "console.log", "wb")  # noqa: SIM115 - stays open for the life of the process
    try:
        process = subprocess.Popen(
            cmd, stdout=console, stderr=subprocess.STDOUT, cwd=workdir, env=env, start_new_session=True
        )
    finally:
        console.close()
    server = ReferenceHms(
        host=host, port=port, process=process, workdir=workdir, backend="postgresql" if postgres else "derby"
    )
    deadline = time.monotonic() + timeout
    last_error = "no attempt"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ReferenceHmsUnavailable(
                f"reference HMS exited with code {process.returncode} before listening:\n{console_tail(server)}"
            )
        try:
            probe_thrift_server(host, port, timeout=5.0)
            return server
        except (OSError, ProbeError) as exc:
            last_error = str(exc)
            time.sleep(0.5)
    server.stop()
    raise ReferenceHmsUnavailable(
        f"reference HMS did not answer on {host}:{port} within {timeout:.0f} s ({last_error}):\n{console_tail(server)}"
    )


def console_tail(server: ReferenceHms, lines: int = 40) -> str:
    try:
        text = server.console_log.read_text(errors="replace")
    except OSError:
        return "(no console output)"
    return "\n".join(text.splitlines()[-lines:])


def stop_process(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """Terminate a server started in its own session (the JVM and anything it forked), then reap it."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)
