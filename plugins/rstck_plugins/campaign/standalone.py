"""A Spark standalone cluster on loopback, from the PySpark installation: for tests and benchmarks.

The pip package has no start-master/start-worker scripts, so the daemons are started with
``spark-class`` directly, bound to 127.0.0.1 on free ports, with the master's REST server off
(it would take the fixed port 6066, so two clusters at once would collide), and stopped by
their process ids.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LoopbackCluster:
    """``with LoopbackCluster(workers=2) as cluster: ... cluster.master_url ...``"""

    def __init__(self, workers: int = 1, cores: int = 1, memory: str = "1g", timeout: float = 180.0) -> None:
        import pyspark

        self.spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
        self.workers, self.cores, self.memory, self.timeout = workers, cores, memory, timeout
        self.dir = Path(tempfile.mkdtemp(prefix="rs-tck-cluster-"))
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYTHONPATH", "PYSPARK_GATEWAY_PORT")}
        env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(self.dir / "work"),
                   SPARK_LOCAL_DIRS=str(self.dir / "local"),
                   SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
        return env

    def _start(self, name: str, args: list[str], ready: str) -> None:
        log = self.dir / f"{name}.log"
        with log.open("wb") as f:
            process = subprocess.Popen([str(self.spark_class), *args], stdout=f, stderr=subprocess.STDOUT,
                                       env=self._env(), cwd=self.dir)
        self.processes.append(process)
        deadline = time.monotonic() + self.timeout
        while ready not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:]
                self.stop(keep_files=True)
                raise RuntimeError(f"Spark {name} did not start (see {log}):\n{tail}")
            time.sleep(0.25)

    def start(self) -> Self:
        (self.dir / "work").mkdir()
        (self.dir / "local").mkdir()
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(self.port), "--webui-port", str(_free_port())],
                    "I have been elected leader")
        for i in range(self.workers):
            self._start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", self.master_url,
                                       "--cores", str(self.cores), "--memory", self.memory,
                                       "--host", "127.0.0.1", "--webui-port", str(_free_port()),
                                       "--work-dir", str(self.dir / "work")],
                        "Successfully registered with master")
        return self

    def stop(self, *, keep_files: bool = False) -> None:
        """Workers first, then the master; each by its own pid (``spark-class`` execs the JVM).

        Then the cluster's folder (logs, the workers' copies of shipped code) goes, unless
        ``keep_files``: after a failure its logs tell what happened.
        """
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self.processes.clear()
        if not keep_files:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop(keep_files=kind is not None)
