"""Run a command where only the test databases the environment names can be reached.

    unshare --net python tests/isolated_services.py REPORT.json -- COMMAND...

Run in a network namespace of its own (`unshare --net`, root), where 127.0.0.1 has nothing
listening until this script starts:

- a Redis (`redis-server`, nothing kept on disk) on a free port whose only user may `SELECT` no
  database but the one the command is told to use, with a `MONITOR` connection noting the
  database of every command it runs;
- a PostgreSQL proxy on a free port, to the machine's server through its Unix socket (the
  namespace has no route to its TCP port), that refuses any connection naming another
  database;
- traps on Redis's and PostgreSQL's default ports (6379, 5432) that count whoever connects.

COMMAND runs with `SCOREWATCH_TEST_REDIS_URL` and `SCOREWATCH_TEST_PG_DSN` pointing at the first
two. Written to REPORT.json: the command's exit status, the databases Redis ran commands in,
the databases PostgreSQL was asked for (served and refused), and the traps' connection counts.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_databases import PG_DATABASE, PG_PORT, pg_dsn

REDIS_DB = 5  # not the default (9), so a test that ignores the environment is caught too
PG_SOCKET_DIR = os.environ.get("SCOREWATCH_TEST_PG_SOCKET_DIR", "/var/run/postgresql")
_SSL_REQUEST, _GSS_REQUEST = 80877103, 80877104
_MONITORED = re.compile(rb'^\+\d+\.\d+ \[(\d+) [^\]]*\] "([A-Za-z]+)"')


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """redis-server on 127.0.0.1:PORT whose one user may select only `db`."""

    def __init__(self, directory: Path, db: int) -> None:
        self.port = _free_port()
        config = directory / "redis.conf"
        config.write_text(
            f'port {self.port}\nbind 127.0.0.1\nsave ""\nappendonly no\ndir {directory}\n'
            f"user default on nopass ~* &* +@all -select +select|{db}\n",
            encoding="utf-8",
        )
        binary = shutil.which("redis-server") or "redis-server"
        self.process = subprocess.Popen(
            [binary, str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.commands: Counter[tuple[int, str]] = Counter()
        self._monitor = self._connect()
        self._monitor.sendall(b"MONITOR\r\n")
        threading.Thread(target=self._watch, daemon=True).start()

    def _connect(self) -> socket.socket:
        for _ in range(200):
            try:
                return socket.create_connection(("127.0.0.1", self.port), timeout=None)
            except OSError:
                threading.Event().wait(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def _watch(self) -> None:
        with self._monitor.makefile("rb") as lines:
            for line in lines:
                found = _MONITORED.match(line)
                if found:
                    command = found.group(2).decode().upper()
                    self.commands[int(found.group(1)), command] += 1

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class PostgresGate:
    """A TCP proxy to PostgreSQL's Unix socket that serves one database and refuses others."""

    def __init__(self, database: str, socket_path: str) -> None:
        self.database, self.socket_path = database, socket_path
        self.port = _free_port()
        self.served: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()

    async def start(self) -> None:
        await asyncio.start_server(self._client, "127.0.0.1", self.port)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            startup = await self._startup(reader, writer)
            if startup is None:
                return
            database = _startup_database(startup)
            if database != self.database:
                self.refused[database] += 1
                writer.write(_fatal(f"database {database!r} is not the test database"))
                await writer.drain()
                return
            self.served[database] += 1
            up_reader, up_writer = await asyncio.open_unix_connection(self.socket_path)
            up_writer.write(startup)
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _startup(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes | None:
        """The startup message, after answering "no" to SSL and GSS encryption requests."""
        while True:
            (length,) = struct.unpack("!I", await reader.readexactly(4))
            body = await reader.readexactly(length - 4)
            code = struct.unpack("!I", body[:4])[0]
            if code in (_SSL_REQUEST, _GSS_REQUEST):
                writer.write(b"N")
                await writer.drain()
                continue
            return struct.pack("!I", length) + body


def _startup_database(startup: bytes) -> str:
    fields = startup[8:].split(b"\0")
    pairs = dict(zip(fields[0::2], fields[1::2], strict=False))
    name = pairs.get(b"database") or pairs.get(b"user") or b""
    return name.decode("utf-8", "replace")


def _fatal(message: str) -> bytes:
    fields = b"SFATAL\0C3D000\0M" + message.encode() + b"\0\0"
    return b"E" + struct.pack("!I", len(fields) + 4) + fields


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


class Trap:
    """Counts the connections made to a port (and closes them)."""

    def __init__(self, port: int) -> None:
        self.port, self.hits = port, 0

    async def start(self) -> None:
        await asyncio.start_server(self._client, "127.0.0.1", self.port)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.hits += 1
        writer.close()


async def isolate(command: list[str]) -> dict[str, Any]:
    """Start the services and the traps, run the command, and say what it touched."""
    socket_path = f"{PG_SOCKET_DIR}/.s.PGSQL.{PG_PORT}"
    with tempfile.TemporaryDirectory(prefix="sw-isolated-") as scratch:
        redis = RedisServer(Path(scratch), REDIS_DB)
        gate = PostgresGate(PG_DATABASE, socket_path)
        traps = {"redis:6379": Trap(6379), "postgres:5432": Trap(5432)}
        await gate.start()
        for trap in traps.values():
            await trap.start()
        env = {
            **os.environ,
            "SCOREWATCH_TEST_REDIS_URL": f"redis://127.0.0.1:{redis.port}/{REDIS_DB}",
            "SCOREWATCH_TEST_PG_DSN": pg_dsn(port=gate.port),
        }
        try:
            process = await asyncio.create_subprocess_exec(*command, env=env)
            code = await process.wait()
        finally:
            redis.stop()
    return {
        "exit_code": code,
        "redis_db": REDIS_DB,
        "redis_commands": [[db, command, n] for (db, command), n in redis.commands.items()],
        "postgres_database": PG_DATABASE,
        "postgres_served": dict(gate.served),
        "postgres_refused": dict(gate.refused),
        "traps": {name: trap.hits for name, trap in traps.items()},
    }


def main(report: Path, command: list[str]) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    outcome = asyncio.run(isolate(command))
    report.write_text(json.dumps(outcome), encoding="utf-8")


if __name__ == "__main__":
    separator = sys.argv.index("--")
    main(Path(sys.argv[1]), sys.argv[separator + 1 :])
