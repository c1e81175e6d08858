"""A real S3-compatible server on 127.0.0.1 for tests: moto's standalone server in its own process.

The tests talk to it through s3fs exactly as to AWS (HTTP, SigV4, ranged GETs); nothing of the client is
mocked. Credentials are dummies the server accepts; `env()` gives the variables a subprocess (a second shell)
needs to reach it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass, field

ACCESS_KEY = "metastore-test-key"
SECRET_KEY = "metastore-test-secret"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """moto_server running on 127.0.0.1:port."""

    port: int
    process: subprocess.Popen[bytes]
    buckets: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """Environment variables pointing boto/s3fs at this server with its credentials."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": REGION,
            # no ~/.aws of the machine's user may change what the tests see
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }

    def new_bucket(self) -> str:
        """Create a fresh, empty bucket and return its name."""
        import boto3

        name = f"t-{uuid.uuid4().hex[:16]}"
        client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                              aws_secret_access_key=SECRET_KEY, region_name=REGION)
        client.create_bucket(Bucket=name)
        self.buckets.append(name)
        return name

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_s3_server(attempts: int = 3) -> S3Server:
    """Start moto_server on a free port of 127.0.0.1 and wait until it answers."""
    last = ""
    for _ in range(attempts):
        port = _free_port()
        # moto logs every request on stderr: a pipe nobody drains fills after a few hundred requests and then
        # blocks every request thread, so the log goes to a file (read back if the server does not start)
        log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server (closed with the process)
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL, stderr=log,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=2):
                    return S3Server(port, process)
            except OSError:
                time.sleep(0.2)
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        log.seek(0)
        last = log.read().decode(errors="replace")[-2000:]
        log.close()
    raise RuntimeError(f"moto_server did not start on 127.0.0.1: {last}")
