"""The trusted side of the sandbox: warm workers, one job per submission, results loaded safely."""
from __future__ import annotations

import base64
import io
import json
import os
import queue
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

import grader
from grader.records import IntegrityNote, ProbeError, StudentFrame, Submission

KIT_ROOT = Path(grader.__file__).resolve().parent
SANDBOX_FILES = ["__init__.py", "probes", "sandbox/__init__.py", "sandbox/driver.py", "sandbox/worker.py"]
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.worker import main; main()"
SLOT_UID_BASE = 61000
TMPFS_BYTES = 512 * 1024**2  # the sandbox's /tmp, where each submission's scratch folder lives


@dataclass(frozen=True)
class Limits:
    probe_seconds: float = 10.0
    submission_seconds: float = 60.0
    cpu_seconds: int = 60
    memory_bytes: int = 2 * 1024**3
    file_bytes: int = 16 * 1024**2
    processes: int = 64


@dataclass
class SandboxRun:
    """What came back from the sandbox for one submission: per probe, outputs or an error."""

    submission: Submission
    results: dict[str, dict[str, Any] | ProbeError] = field(default_factory=dict)
    integrity: list[IntegrityNote] = field(default_factory=list)


def decode(payload: bytes) -> dict[str, Any] | ProbeError:
    """Load a child's result with weights_only=True and accept plain tensors and data only."""
    try:
        result = torch.load(io.BytesIO(payload), weights_only=True)
        _check_plain(result)
    except Exception as exc:  # noqa: BLE001 - anything unexpected is an integrity problem
        return ProbeError(kind="integrity", key="integrity.bad-result", params={"reason": str(exc)[:300]})
    if "ok" in result and isinstance(result["ok"], dict):
        return result["ok"]
    if "error" in result and isinstance(result["error"], dict):
        return error_from_dict(result["error"])
    return ProbeError(kind="integrity", key="integrity.bad-result", params={"reason": "shape of record"})


def _check_plain(value: Any, depth: int = 0) -> None:
    if depth > 10:
        raise ValueError("nested too deeply")
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor or value.requires_grad or value.is_sparse:
            raise ValueError(f"not a plain tensor: {type(value).__name__}")
    elif isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str:
                raise ValueError("non-string key")
            _check_plain(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_plain(item, depth + 1)
    elif value is not None and type(value) not in (bool, int, float, str):
        raise ValueError(f"unexpected {type(value).__name__}")


def error_from_dict(data: dict) -> ProbeError:
    frames = tuple(
        StudentFrame(str(f.get("file", "")), int(f.get("line", 0)), str(f.get("function", "")), str(f.get("code", "")))
        for f in data.get("frames", []) if isinstance(f, dict)
    )
    params = data.get("params") if isinstance(data.get("params"), dict) else {}
    return ProbeError(kind=str(data.get("kind", "exception")), exc_type=str(data.get("exc_type", "")),
                      message=str(data.get("message", "")), module=str(data.get("module", "")),
                      frames=frames, key=str(data.get("key", "")), params=params)


def _bwrap_available() -> bool:
    if not shutil.which("bwrap"):
        return False
    probe = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
             "--unshare-pid", "--die-with-parent", "true"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def _hide_targets(paths: list[Path], keep: list[Path]) -> list[Path]:
    """Directories to cover with an empty tmpfs: `paths`, except ancestors of what must stay visible."""
    targets: list[Path] = []
    for path in paths:
        path = path.resolve()
        if not path.is_dir():
            continue
        if any(k == path or path in k.parents for k in keep):
            targets += _hide_targets([child for child in path.iterdir() if child.is_dir()], keep)
        else:
            targets.append(path)
    return sorted(set(targets))


class SandboxPool:
    """`jobs` warm workers; each grades one submission at a time in a restricted forked child."""

    def __init__(self, jobs: int, limits: Limits = Limits(), hide: list[Path] = (), probes: list[str] = ()):
        self.jobs = max(1, jobs)
        self.limits = limits
        self.probes = list(probes)
        self.staging = Path(tempfile.mkdtemp(prefix="attention-kit-sandbox-"))
        self._stage_code()
        self.use_bwrap = _bwrap_available()
        self.is_root = os.getuid() == 0
        keep = [Path(p).resolve() for p in (sys.prefix, sys.base_prefix, Path(sys.executable).parent,
                                            Path(torch.__file__).parent)]
        import solutions  # only to find (and hide) where the answer key lives

        hidden = [KIT_ROOT, KIT_ROOT.parent / ".git", Path(solutions.__file__).resolve().parent, *hide]
        if (KIT_ROOT.parent / "pyproject.toml").exists():
            hidden.append(KIT_ROOT.parent)
        self.hidden = _hide_targets(hidden, keep)
        self._jobs: queue.Queue = queue.Queue()
        self._results: queue.Queue = queue.Queue()
        self._threads = [threading.Thread(target=self._slot, args=(slot,), daemon=True) for slot in range(self.jobs)]
        self._pending = 0
        for thread in self._threads:
            thread.start()

    # -- public API -------------------------------------------------------------------------------
    def protections(self) -> list[IntegrityNote]:
        """Protections this machine cannot provide; empty when the sandbox is complete."""
        notes = []
        if not self.use_bwrap:
            notes.append(IntegrityNote("sandbox.no-bubblewrap", "bwrap"))
        if not self.is_root:
            notes.append(IntegrityNote("sandbox.no-uid-separation", str(os.getuid())))
        return notes

    def submit(self, submission: Submission) -> None:
        self._pending += 1
        self._jobs.put(submission)

    def results(self) -> Iterator[SandboxRun]:
        while self._pending:
            run = self._results.get()
            self._pending -= 1
            yield run

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- workers ----------------------------------------------------------------------------------
    def _stage_code(self) -> None:
        """Copy only the probe and sandbox code (never suites or solutions) for the workers."""
        target = self.staging / "kit" / "grader"
        for name in SANDBOX_FILES:
            source = KIT_ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)
        os.chmod(self.staging, 0o755)

    def _command(self, slot: int, result_fd: int) -> list[str]:
        uid, fd = str(SLOT_UID_BASE + slot), str(result_fd)
        python = [sys.executable, "-E", "-s", "-c", BOOT]
        if not self.use_bwrap:
            return python + [str(self.staging / "kit"), "--uid", uid, "--result-fd", fd]
        command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp",
                   "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
        for path in self.hidden:
            command += ["--tmpfs", str(path)]
        command += ["--ro-bind", str(self.staging / "kit"), "/tmp/kit", "--chdir", "/tmp"]
        return command + python + ["/tmp/kit", "--uid", uid, "--result-fd", fd]

    def _spawn(self, slot: int) -> "_Worker":
        return _Worker(lambda fd: self._command(slot, fd), network_isolated=self.use_bwrap)

    def _slot(self, slot: int) -> None:
        worker = None
        while True:
            submission = self._jobs.get()
            if submission is None:
                break
            run = SandboxRun(submission)
            remaining = list(self.probes)
            for attempt in range(3):
                if worker is None or not worker.alive():
                    worker = self._spawn(slot)
                done = worker.run(submission, remaining, self.limits, run.results)
                remaining = [name for name in remaining if name not in run.results]
                if done or not remaining:
                    break
                worker.kill()
                worker = None
            for name in remaining:
                run.results[name] = ProbeError(kind="crash", key="sandbox.worker-died")
            self._results.put(run)
        if worker is not None:
            worker.stop()


class _Worker:
    def __init__(self, command: Callable[[int], list[str]], network_isolated: bool):
        read_fd, write_fd = os.pipe()
        self.network_isolated = network_isolated
        self.process = subprocess.Popen(
            command(write_fd), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(write_fd,),
        )
        os.close(write_fd)
        self.reader = os.fdopen(read_fd, "rb")
        header = self._read_header()
        if not header or header.get("status") != "ready":
            raise RuntimeError("the sandbox worker failed to start")

    def alive(self) -> bool:
        return self.process.poll() is None

    def _read_header(self) -> dict | None:
        head = self.reader.read(4)
        if len(head) < 4:
            return None
        header = json.loads(self.reader.read(struct.unpack(">I", head)[0]))
        payload = self.reader.read(header["size"]) if header.get("size") else b""
        header["payload"] = payload
        return header

    def run(self, submission: Submission, probes: list[str], limits: Limits,
            results: dict[str, dict | ProbeError]) -> bool:
        """Grade one submission; fills `results`; False when the worker died mid-job."""
        job = {
            "id": submission.name,
            "files": {f"{module}.py": base64.b64encode(source.encode()).decode()
                      for module, source in submission.sources.items()},
            "probes": probes,
            "limits": {"probe_seconds": limits.probe_seconds, "submission_seconds": limits.submission_seconds,
                       "cpu_seconds": limits.cpu_seconds, "memory_bytes": limits.memory_bytes,
                       "file_bytes": limits.file_bytes, "processes": limits.processes,
                       "network_isolated": self.network_isolated},
        }
        try:
            self.process.stdin.write(json.dumps(job).encode() + b"\n")
            self.process.stdin.flush()
            while True:
                header = self._read_header()
                if header is None:
                    return False
                if header.get("status") == "done":
                    return True
                name = header.get("probe")
                if name not in probes:
                    continue
                if header["status"] == "ok":
                    results[name] = decode(header["payload"])
                else:
                    module = str(header.get("module", ""))
                    results[name] = ProbeError(kind=str(header["status"]), module=module,
                                               key=f"sandbox.{header['status']}", params={"module": module})
        except (BrokenPipeError, OSError, ValueError):
            return False

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except Exception:  # noqa: BLE001
            self.kill()
