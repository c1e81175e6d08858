"""A real Spark standalone cluster and a Spark Connect server on 127.0.0.1, from the pyspark package's own scripts.

The master and the worker run as `bin/spark-class ...` processes (each in its own session, stopped by process
group); executors are JVMs the worker forks, with Python workers running this interpreter. The Connect server is
`sbin/start-connect-server.sh` in the foreground (SPARK_NO_DAEMONIZE) against that cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from interop.reference_hms import free_port, stop_process


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def cluster_env(workdir: Path) -> dict[str, str]:
    """The environment of every Spark process here: loopback only, this interpreter for Python workers."""
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "localhost",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(workdir / "logs"),
        "SPARK_PID_DIR": str(workdir / "pids"),
        "SPARK_NO_DAEMONIZE": "1",
    }


@dataclass
class Cluster:
    """A running master and worker."""

    master_url: str
    ui_port: int
    worker_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as reply:
            return json.loads(reply.read())

    def executor_logs(self) -> str:
        """Everything the executors wrote to stderr (the worker keeps it per application and executor)."""
        return "\n".join(p.read_text(errors="replace") for p in self.worker_dir.glob("app-*/*/stderr"))

    def log_tail(self) -> str:
        return "\n".join(f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-30:])
                         for p in self.logs if p.exists())

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_process(process, grace=20.0)


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def start_cluster(workdir: Path, cores: int = 4, memory: str = "4g", timeout: float = 120.0) -> Cluster:
    """Start a master and one worker offering ``cores`` and ``memory``; returns once the worker is registered."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = cluster_env(workdir)
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", ui, workdir / "work")
    cluster.worker_dir.mkdir(exist_ok=True)
    cluster.logs = [workdir / "master.log", workdir / "worker.log"]
    cluster.processes.append(_spawn(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(ui)], env, cluster.logs[0]))
    try:
        _wait(lambda: cluster.state().get("status") == "ALIVE", timeout, "the master", cluster)
        cluster.processes.append(_spawn(
            [spark_class, "org.apache.spark.deploy.worker.Worker", cluster.master_url, "--host", "127.0.0.1",
             "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
             "--work-dir", str(cluster.worker_dir)], env, cluster.logs[1]))
        _wait(lambda: any(w.get("state") == "ALIVE" for w in cluster.state().get("workers", [])), timeout,
              "the worker", cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@dataclass
class ConnectServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:]) if self.log.exists() else ""

    def stop(self) -> None:
        stop_process(self.process, grace=20.0)


def start_connect_server(workdir: Path, master: str, conf: dict[str, str] | None = None,
                         timeout: float = 180.0) -> ConnectServer:
    """`sbin/start-connect-server.sh --master MASTER` in the foreground; returns once its gRPC port answers."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = cluster_env(workdir)
    port = free_port()
    args = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--master", master,
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.pyspark.python={sys.executable}"]
    for key, value in (conf or {}).items():
        args += ["--conf", f"{key}={value}"]
    log = workdir / "connect.log"
    server = ConnectServer(f"sc://127.0.0.1:{port}", _spawn(args, env, log), log)

    def answers() -> bool:
        import socket

        if server.process.poll() is not None:
            raise RuntimeError(f"the Spark Connect server exited:\n{server.log_tail()}")
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        _wait(answers, timeout, "the Spark Connect server", server)
    except BaseException:
        server.stop()
        raise
    return server


def _wait(ready, timeout: float, what: str, owner) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not come up within {timeout:.0f} s:\n{owner.log_tail()}")
