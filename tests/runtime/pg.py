"""A real PostgreSQL server for the tests: Debian's binaries, started in a temporary folder on a free port.

Running as root (as CI does), the server runs as the `postgres` user through `runuser`. The socket lives in
the temporary folder and TCP is off, so parallel test sessions do not collide.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from components import find_executable

__all__ = ["REASON", "binaries", "new_database", "outage", "server", "start", "stop"]

REASON = "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql"


_SETTINGS = "-c listen_addresses='' -c fsync=off -c synchronous_commit=off -c max_connections=400"
"""No TCP, no waiting for the disk; room for every xdist worker's connections (the run shares one server)."""


def binaries() -> Path | None:
    """The folder of `initdb` and `pg_ctl`, or None."""
    found = find_executable("pg_ctl", "/usr/lib/postgresql/*/bin")
    return found.parent if found is not None and (found.parent / "initdb").is_file() else None


def _as_postgres(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(bin_dir: Path) -> str:
    """Start a throw-away server (it runs until `stop`, whoever started it); the URL of its `postgres` database."""
    folder = Path(tempfile.mkdtemp(prefix="agentmap-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", _free_port()
    user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")
    url = f"postgresql://{user}@/postgres?host={folder}&port={port}"
    try:
        subprocess.run(
            _as_postgres(
                [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", user, "--no-sync", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )
        options = f"-p {port} -k {folder} {_SETTINGS}"
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "start"]),
            check=True,
            capture_output=True,
        )
    except BaseException:
        stop(url)
        raise
    return url


def stop(url: str) -> None:
    """Stop the server of `url` (from `start`) and delete its files."""
    from urllib.parse import parse_qs, urlparse

    folder = Path(parse_qs(urlparse(url).query)["host"][0])
    bin_dir = binaries()
    if bin_dir is not None and (folder / "data").exists():
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(folder / "data"), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
        )
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def server(bin_dir: Path) -> Iterator[str]:
    """Start a throw-away server; yield the URL of its `postgres` database; stop and delete it afterwards."""
    url = start(bin_dir)
    try:
        yield url
    finally:
        stop(url)


def new_database(url: str) -> str:
    """Create an empty database on the server of `url`; return its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return url.replace("/postgres?", f"/{name}?", 1)


def outage(url: str, seconds: float) -> None:
    """Stop the server of `url` (every connection cut at once) and start it again after `seconds`."""
    from urllib.parse import parse_qs, urlparse

    query = parse_qs(urlparse(url).query)
    folder, port = Path(query["host"][0]), query["port"][0]
    bin_dir = binaries()
    assert bin_dir is not None
    data = folder / "data"
    pg_ctl = str(bin_dir / "pg_ctl")
    stop = [pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"]  # connections cut; committed work kept
    subprocess.run(_as_postgres(stop), check=True, capture_output=True)
    time.sleep(seconds)  # the outage itself
    options = f"-p {port} -k {folder} {_SETTINGS}"
    subprocess.run(
        _as_postgres([pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"]),
        check=True,
        capture_output=True,
    )
