"""A throwaway PostgreSQL server for the tests: initdb, start on a private unix socket, stop, remove.

    with running_server() as server:          # raises Unavailable when it cannot run here
        url = server.create_database("bench")   # postgresql+psycopg://textcause@/bench?host=<socket dir>

The cluster lives in a fresh folder in RAM (/dev/shm; else the temporary directory), listens on a unix socket in that
folder only (``listen_addresses = ''``: no network address at all) and trusts local connections. As
root (initdb refuses to run as root) the server runs as the ``postgres`` user, else ``nobody``,
through ``runuser``; the folder is handed to that user. Every command has a timeout, and stopping
is ``pg_ctl stop -m fast`` with a kill of the server's own pid as the last resort.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

SUPERUSER = "textcause"
START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections
COMMAND_TIMEOUT = 120  # seconds any one command may take
SETTINGS = {  # a throwaway test cluster: no durability, a private socket, no TCP
    "listen_addresses": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "60",
    "shared_buffers": "32MB",
}
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


class Unavailable(RuntimeError):
    """PostgreSQL cannot run here (no server binaries, or no unprivileged user to run them)."""


def find_bindir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres`` (on PATH, else the newest Debian one).

    Raises:
        Unavailable: if no such folder exists.
    """
    candidates = []
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(re.sub(r"\D", "", p) or 0), reverse=True)
    candidates += [Path(p) for p in debian]
    for folder in candidates:
        if all(
            (folder / name).is_file() and os.access(folder / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres")
        ):
            return folder
    raise Unavailable(
        "the PostgreSQL server programs (initdb, pg_ctl, postgres) are not installed "
        "(Debian: apt-get install postgresql)"
    )


def server_user() -> str | None:
    """The user to run the server as: None (the current user) unless we are root."""
    if os.geteuid() != 0:
        return None
    if shutil.which("runuser") is None:
        raise Unavailable("running as root and 'runuser' is missing, so the server cannot drop privileges")
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise Unavailable("running as root and there is no 'postgres' or 'nobody' user to run the server as")


def _base_dir() -> str:
    """Where the cluster goes: RAM (/dev/shm) when there is one, else the temporary directory.

    On a busy disk, removing a used cluster's few thousand files took 11 s; in RAM it is instant.
    """
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK):
        return "/dev/shm"
    base = tempfile.gettempdir()
    return base if len(base) <= 60 else "/tmp"  # a unix socket path is limited to 107 bytes


class PgServer:
    """One throwaway cluster; use :func:`running_server` rather than this class directly."""

    def __init__(self, bindir: Path, user: str | None) -> None:
        self.bindir, self.user = bindir, user
        self.root = Path(tempfile.mkdtemp(prefix="textcause-pg-", dir=_base_dir()))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.started = False

    @property
    def socket_dir(self) -> str:
        return str(self.root)

    def _run(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C")
        return subprocess.run(
            cmd, cwd=self.root, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )

    def _check(self, what: str, done: subprocess.CompletedProcess) -> None:
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}\n{log}")

    def start(self) -> None:
        """initdb, then ``pg_ctl start -w`` on the private socket."""
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        os.chmod(self.root, 0o700)
        self._check(
            "initdb",
            self._run(
                "initdb", "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"
            ),
        )
        settings = {**SETTINGS, "unix_socket_directories": f"'{self.socket_dir}'"}
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as fh:  # keeps the file's owner
            fh.write("\n# textcause tests\n" + "".join(f"{k} = {v}\n" for k, v in settings.items()))
        self.started = True  # from here on, stop() must run
        self._check(
            "pg_ctl start",
            self._run(
                "pg_ctl",
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-w",
                "-t",
                str(START_TIMEOUT),
                "start",
                timeout=START_TIMEOUT + 30,
            ),
        )

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` on this server (psycopg 3 over the unix socket)."""
        return f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.socket_dir}"

    def connect(self, database: str = "postgres", **kwargs):
        """A plain psycopg connection (no SQLAlchemy), e.g. to check what the code under test wrote."""
        import psycopg

        return psycopg.connect(host=self.socket_dir, user=SUPERUSER, dbname=database, connect_timeout=30, **kwargs)

    def create_database(self, name: str) -> str:
        """``CREATE DATABASE name``; returns its URL."""
        if not _NAME.match(name):
            raise ValueError(f"The database name must be a lowercase identifier. Got {name!r} instead.")
        with self.connect(autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        """``pg_ctl stop -m fast`` (then a kill of the server's pid if that failed), and remove the folder."""
        try:
            if self.started:
                try:
                    done = self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop", timeout=60)
                    stopped = done.returncode == 0
                except subprocess.TimeoutExpired:
                    stopped = False
                if not stopped:
                    self._kill_postmaster()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _kill_postmaster(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int((self.data / "postmaster.pid").read_text().splitlines()[0])
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def running_server() -> Iterator[PgServer]:
    """A started throwaway server, stopped and removed on exit.

    Raises:
        Unavailable: if PostgreSQL cannot run on this machine (the caller skips).
        RuntimeError: if it can, but initdb or the start failed (with the server's log).
    """
    server = PgServer(find_bindir(), server_user())
    try:
        server.start()
        yield server
    finally:
        server.stop()
