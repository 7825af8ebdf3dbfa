"""The trusted side of the sandbox: warm workers, one job per submission, results loaded safely."""
from __future__ import annotations

import base64
import json
import os
import queue
import select
import shutil
import site
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import grader
from grader.records import IntegrityNote, ProbeError, StudentFrame, Submission

# torch (through the codec) is imported where results are decoded, not here: a pool can start its
# workers before the grader itself has paid for importing torch.

KIT_ROOT = Path(grader.__file__).resolve().parent
SANDBOX_FILES = ["__init__.py", "probes", "sandbox/__init__.py", "sandbox/codec.py", "sandbox/driver.py",
                 "sandbox/worker.py"]
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.worker import main; main()"
SLOT_UID_BASE = 61000
TMPFS_BYTES = 512 * 1024**2  # the sandbox's /tmp, where each submission's scratch folder lives
MAX_PAYLOAD = 32 * 1024**2 + 1024
# Top-level directories of the host that the sandbox sees (read-only); symlinks stay symlinks.
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")


@dataclass(frozen=True)
class Limits:
    probe_seconds: float = 10.0
    submission_seconds: float = 60.0
    cpu_seconds: int = 60
    memory_bytes: int = 1024**3  # address space on top of torch's own, per process
    file_bytes: int = 16 * 1024**2
    processes: int = 8  # tasks of the child's uid: processes x memory stays well inside the machine


@dataclass
class SandboxRun:
    """What came back from the sandbox for one submission: per probe, outputs or an error."""

    submission: Submission
    results: dict[str, dict[str, Any] | ProbeError] = field(default_factory=dict)


def decode(payload: bytes) -> dict[str, Any] | ProbeError:
    """Decode a child's result (data only, no pickle) and accept plain tensors and data only."""
    from grader.sandbox import codec

    try:
        result = codec.decode(payload)
        _check_plain(result)
    except Exception as exc:  # noqa: BLE001 - anything unexpected is an integrity problem
        return ProbeError(kind="integrity", key="integrity.bad-result", params={"reason": str(exc)[:300]})
    if isinstance(result, dict) and "ok" in result and isinstance(result["ok"], dict):
        return result["ok"]
    if isinstance(result, dict) and "error" in result and isinstance(result["error"], dict):
        return error_from_dict(result["error"])
    return ProbeError(kind="integrity", key="integrity.bad-result", params={"reason": "shape of record"})


def _check_plain(value: Any, depth: int = 0) -> None:
    import torch

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


def result_from_record(record: dict) -> dict[str, Any] | ProbeError:
    """A probe record ({"ok": outputs} or {"error": description}) as the trusted side holds it."""
    return record["ok"] if "ok" in record else error_from_dict(record["error"])


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
    try:
        return subprocess.run(probe, capture_output=True, stdin=subprocess.DEVNULL, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _site_packages_of(package: str) -> str:
    """The directory a package is installed in, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    origin = spec.origin if spec is not None and spec.origin else ""
    return os.path.dirname(os.path.dirname(origin)) if origin else ""


def _python_roots() -> list[Path]:
    """What the interpreter needs to run: its prefixes and site-packages (never the kit's checkout)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             _site_packages_of("torch")}
    paths |= set(site.getsitepackages())
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths()[key])
    roots = sorted({Path(p).resolve() for p in paths if p and os.path.isdir(p)})
    return [r for r in roots if not any(other != r and other in r.parents for other in roots)]


def _hide_targets(paths: list[Path], keep: list[Path]) -> list[Path]:
    """Directories to cover with an empty tmpfs: `paths`, except ancestors of what must stay visible."""
    targets: list[Path] = []
    for path in paths:
        path = path.resolve()
        if not path.is_dir() or path in keep:
            continue  # what must stay visible itself (e.g. a venv inside the repository)
        if any(path in k.parents for k in keep):
            targets += _hide_targets([child for child in path.iterdir() if child.is_dir()], keep)
        else:
            targets.append(path)
    return sorted(set(targets))


def _uid_base() -> int:
    """Per-run uids for the slots, so that two grading runs on one machine never share a uid."""
    return SLOT_UID_BASE + (os.getpid() % 2000) * 16


class SandboxPool:
    """`jobs` warm workers; each grades one submission at a time in a restricted forked child.

    The workers start as soon as the pool exists (each imports torch: about two seconds), so that
    their start-up overlaps whatever the caller does before submitting.
    """

    def __init__(self, jobs: int, limits: Limits = Limits(), hide: list[Path] = (), probes: list[str] = ()):
        self.jobs = max(1, jobs)
        self.limits = limits
        self.probes = list(probes)
        self.staging = Path(tempfile.mkdtemp(prefix="attention-kit-sandbox-"))
        self._stage_code()
        self.use_bwrap = _bwrap_available()
        self.is_root = os.getuid() == 0
        self.uid_base = _uid_base()
        self.roots = _python_roots()
        import solutions  # only to find (and hide) where the answer key lives

        hidden = [KIT_ROOT, KIT_ROOT.parent / ".git", Path(solutions.__file__).resolve().parent, *hide]
        if (KIT_ROOT.parent / "pyproject.toml").exists():
            hidden.append(KIT_ROOT.parent)
        # Only the system's and the interpreter's directories are mounted in the sandbox; of the
        # hidden paths, only those inside them (e.g. the kit installed into site-packages) need covering.
        mounted = self.roots + [Path("/") / name for name in SYSTEM_DIRS]
        self.hidden = [p for p in _hide_targets(hidden, self.roots)
                       if any(root == p or root in p.parents for root in mounted)]
        self._closed = False
        self._kill_now = False
        self._workers: dict[int, _Worker] = {}
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
        if not self.use_bwrap and not self.is_root:
            notes.append(IntegrityNote("sandbox.no-network-isolation", "unshare"))
        return notes

    def submit(self, submission: Submission, probes: list[str] | None = None) -> None:
        """Queue a submission, to run `probes` (default: the pool's)."""
        self._pending += 1
        self._jobs.put((submission, list(self.probes if probes is None else probes)))

    def results(self) -> Iterator[SandboxRun]:
        while self._pending:
            run = self._results.get()
            self._pending -= 1
            yield run

    def close(self, kill: bool = False) -> None:
        """Stop the workers; `kill` does not wait for the jobs in flight (an interrupted run)."""
        if self._closed:
            return
        self._closed = True
        if kill:
            self._kill_now = True
            for worker in list(self._workers.values()):
                worker.kill()
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(kill=exc_type is not None)

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
        uid, fd = str(self.uid_base + slot), str(result_fd)
        python = [sys.executable, "-E", "-s", "-B", "-c", BOOT]
        if not self.use_bwrap:
            return python + [str(self.staging / "kit"), "--uid", uid, "--result-fd", fd]
        # An allowlist: the system's directories and the interpreter's, read-only; an empty /tmp
        # (where the scratch copies live); the staged probe code. Nothing else of the host exists.
        command = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                   "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        # The empty /tmp first: an interpreter or venv that lives under the host's /tmp (a CI clone)
        # is bound on top of it below, instead of being covered by it.
        command += ["--dev", "/dev", "--proc", "/proc", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
        for name in SYSTEM_DIRS:
            path = Path("/") / name
            if path.is_symlink():
                command += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                command += ["--ro-bind", str(path), str(path)]
        for root in self.roots:
            command += ["--ro-bind", str(root), str(root)]
        for path in self.hidden:
            command += ["--tmpfs", str(path)]
        command += ["--ro-bind", str(self.staging / "kit"), "/tmp/kit", "--chdir", "/tmp"]
        return command + python + ["/tmp/kit", "--uid", uid, "--result-fd", fd, "--pid-namespace"]

    def _spawn(self, slot: int) -> "_Worker":
        return _Worker(lambda fd: self._command(slot, fd), network_isolated=self.use_bwrap,
                       timeout=self.limits.submission_seconds + 60)

    def _slot(self, slot: int) -> None:
        worker = None
        try:
            worker = self._spawn(slot)
            self._workers[slot] = worker
        except Exception:  # noqa: BLE001 - tried again (and reported) with the first job
            worker = None
        while True:
            job = self._jobs.get()
            if job is None:
                break
            submission, probes = job
            run = SandboxRun(submission)
            try:
                remaining = list(probes)
                for attempt in range(3):
                    if self._kill_now:
                        break
                    if worker is None or not worker.alive():
                        worker = None
                        worker = self._spawn(slot)
                        self._workers[slot] = worker
                    done = worker.run(submission, remaining, self.limits, run.results)
                    remaining = [name for name in remaining if name not in run.results]
                    if done or not remaining:
                        break
                    worker.kill()  # died, hung or spoke garbage: a fresh worker retries the rest
                    worker = None
                for name in remaining:
                    run.results[name] = ProbeError(kind="crash", key="sandbox.worker-died")
            except Exception as exc:  # noqa: BLE001 - a slot must always answer, or the run hangs
                for name in probes:
                    run.results.setdefault(name, ProbeError(kind="crash", key="sandbox.worker-died",
                                                            params={"reason": str(exc)[:200]}))
                if worker is not None:
                    worker.kill()
                worker = None
            self._results.put(run)
        if worker is not None:
            worker.stop()
        self._workers.pop(slot, None)


class _Worker:
    def __init__(self, command: Callable[[int], list[str]], network_isolated: bool, timeout: float):
        read_fd, write_fd = os.pipe()
        self.network_isolated = network_isolated
        self.timeout = timeout
        self.fd = read_fd
        self._buffer = bytearray()
        try:
            self.process = subprocess.Popen(
                command(write_fd), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(write_fd,), env=_worker_environment(), start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        try:
            header = self._read_header(time.monotonic() + 120)
        except (OSError, ValueError, TimeoutError, struct.error):
            header = None
        if not header or header.get("status") != "ready":
            self.kill()
            raise RuntimeError("the sandbox worker failed to start")

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def _read_exact(self, count: int, deadline: float) -> bytes | None:
        """Buffered: one read takes every frame the worker has already written."""
        buffer = self._buffer
        while len(buffer) < count:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([self.fd], [], [], timeout)[0]:
                raise TimeoutError
            chunk = os.read(self.fd, min(max(count - len(buffer), 1 << 16), 1 << 20))
            if not chunk:
                return None
            buffer += chunk
        data = bytes(buffer[:count])
        del buffer[:count]
        return data

    def _read_header(self, deadline: float) -> dict | None:
        """One frame from the worker; None when it closed the channel. Garbage raises ValueError."""
        head = self._read_exact(4, deadline)
        if head is None:
            return None
        length = struct.unpack(">I", head)[0]
        if length > 1 << 16:
            raise ValueError("header too long")
        raw = self._read_exact(length, deadline)
        if raw is None:
            return None
        header = json.loads(raw)
        if type(header) is not dict or type(header.get("size", 0)) is not int \
                or not 0 <= header.get("size", 0) <= MAX_PAYLOAD:
            raise ValueError("not a frame header")
        payload = self._read_exact(header["size"], deadline) if header.get("size") else b""
        if payload is None:
            return None
        header["payload"] = payload
        return header

    def run(self, submission: Submission, probes: list[str], limits: Limits,
            results: dict[str, dict | ProbeError]) -> bool:
        """Grade one submission; fills `results`; False when the worker died, hung or misbehaved."""
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
        deadline = time.monotonic() + self.timeout
        try:
            self.process.stdin.write(json.dumps(job).encode() + b"\n")
            self.process.stdin.flush()
            while True:
                header = self._read_header(deadline)
                if header is None or header.get("id") != submission.name:
                    return False
                if header.get("status") == "done":
                    return True
                name = header.get("probe")
                if name not in probes or name in results:
                    continue
                status = str(header.get("status"))
                if status == "ok":
                    results[name] = decode(header["payload"])
                elif status in ("timeout", "crash", "resource", "exit"):
                    module = str(header.get("module", ""))
                    results[name] = ProbeError(kind=status, module=module, key=f"sandbox.{status}",
                                               params={"module": module})
                else:
                    return False
        except (OSError, ValueError, TimeoutError, struct.error):
            return False

    def kill(self) -> None:
        try:
            self.process.kill()
            self.process.wait(timeout=30)
        except (OSError, subprocess.SubprocessError):
            pass
        self._close_fd()

    def _close_fd(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1

    def stop(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
            self._close_fd()
        except Exception:  # noqa: BLE001
            self.kill()


def _worker_environment() -> dict[str, str]:
    """A minimal environment: nothing of the grader's (tokens, paths) reaches student code.

    glibc.malloc.hugetlb=1 asks glibc's malloc for transparent huge pages: torch's ~100 MB heap
    then takes 2 MB pages, so each fork of the worker copies (and each child's exit frees) about
    fifty page-table entries instead of some 25,000 (see worker._use_huge_pages).
    """
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
