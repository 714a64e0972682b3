"""Atomic file writes: a file rheo writes is either the previous one, or none, or the whole new
one, whenever the process is killed (POSIX rename semantics).

Every writer goes through `atomic_path`: the content goes to a temporary file in the same folder
(`.NAME.<random>.tmp`, so the rename never crosses a file system), is flushed and fsynced, then
`os.replace` puts it in place in one step. A writer that raises leaves no temporary file behind;
a process killed mid-write may leave one (hidden, never the target's name).

    write_text_atomic(path, text)           # reports, JSON
    write_bytes_atomic(path, data)
    with open_atomic(path) as fh: ...       # streamed writes (json.dump)
    savefig_atomic(fig, path, dpi=110)      # matplotlib figures
    write_with(path, lambda tmp: save_file(tensors, tmp, metadata=md))   # safetensors, any writer
    check_writable(path)                    # before long work: refuse an output that cannot be written

Failures raise `OutputError` (a path that cannot be written: exit 2) or `EnvironmentFailure`
(a full disk, an I/O error: exit 1), one line naming the path. A folder that `check_writable`
accepted before the work and that fails later (removed or made read-only mid-run) is the
environment's failure, not the input's: exit 1.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .errors import EnvironmentFailure, OutputError


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every platform opens folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# errors of the path the user chose (exit 2); any other (a full disk, an I/O error) is the machine's (exit 1)
_PATH_ERRNOS = {
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.ENAMETOOLONG,
    errno.ELOOP,
    errno.EEXIST,
}


# folders `check_writable` accepted in this process (absolute paths)
_CHECKED: set[str] = set()


def _output_error(path: Path, e: OSError, *, up_front: bool = False) -> OutputError | EnvironmentFailure:
    if e.errno in _PATH_ERRNOS and not up_front and os.path.abspath(path.parent) in _CHECKED:
        return EnvironmentFailure(
            f"writing {str(path)!r} failed: {e.strerror or e} (its folder was writable when checked before the work)"
        )
    if e.errno in _PATH_ERRNOS:
        return OutputError(
            f"cannot write {str(path)!r}: {e.strerror or e}; allowed: a file path in an existing, writable folder"
        )
    return EnvironmentFailure(f"writing {str(path)!r} failed: {e.strerror or e}")


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; when the block succeeds, fsync it and rename it to
    `path`. When the block raises, the temporary file is removed and `path` is left as it was."""
    path = _no_nul(path)
    if path.is_dir():
        raise OutputError(
            f"cannot write {str(path)!r}: it is a folder; allowed: a file path in an existing, writable folder"
        )
    path = _real(path)
    if _kind(path) == "device":  # /dev/null, a terminal: written through, never replaced by a file
        tmp = path
        try:
            yield tmp
        except OSError as e:
            raise _output_error(path, e) from None
        return
    tmp = _temporary(path)
    try:
        yield tmp
        if not tmp.exists():  # a writer that added its own suffix, or wrote nothing
            raise OutputError(f"writing {str(path)!r}: the writer did not create {tmp.name}")
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise _output_error(path, e) from None
    finally:
        if tmp.exists():
            try:
                tmp.unlink()
            except OSError:
                pass
    _fsync_dir(path.parent)


@contextmanager
def open_atomic(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """A file object writing to a temporary name; renamed to `path` when the block succeeds."""
    if mode not in ("w", "wb"):
        raise ValueError(f"open_atomic mode {mode!r}; allowed: 'w', 'wb'")
    with atomic_path(path) as tmp:
        try:
            fh = open(tmp, mode, encoding=None if "b" in mode else encoding)
        except OSError as e:
            raise _output_error(Path(path), e) from None
        with fh:
            yield fh


def write_text_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    with open_atomic(path, "w", encoding) as fh:
        fh.write(text)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    with open_atomic(path, "wb") as fh:
        fh.write(data)


def write_with(path: str | os.PathLike, writer: Callable[[str], Any]) -> None:
    """`writer(tmp)` writes the whole file at the temporary path `tmp` (e.g. safetensors'
    `save_file(tensors, tmp)`); then it is renamed to `path`."""
    with atomic_path(path) as tmp:
        writer(str(tmp))


def savefig_atomic(fig: Any, path: str | os.PathLike, **kwargs: Any) -> None:
    """`fig.savefig(path, **kwargs)`, atomically (the format comes from `path`'s suffix)."""
    fmt = kwargs.pop("format", None) or (Path(path).suffix.lstrip(".") or "png")
    write_with(path, lambda tmp: fig.savefig(tmp, format=fmt, **kwargs))


def check_writable(
    path: str | os.PathLike, *, folder: bool = False, parents: bool = False, inputs: tuple[str, ...] = ()
) -> Path:
    """Refuse up front, before any long work, an output that cannot be written: `path` is a file
    to write (its folder must exist, or with parents=True is created, and accept new files) or,
    with folder=True, a folder to write files into (created when missing). Probes by creating and
    removing a hidden file."""
    path = _no_nul(path)
    for given in inputs:  # `compare CASE --plot CASE` must not overwrite its input
        try:
            same = os.path.exists(path) and os.path.samefile(path, given)
        except (OSError, ValueError):
            same = False
        if same:
            raise OutputError(f"cannot write {str(path)!r}: it is the input {given!r}; allowed: another path")
    where = path if folder else path.parent
    try:
        if parents and not folder:
            where.mkdir(parents=True, exist_ok=True)
        if folder:
            if path.exists() and not path.is_dir():
                raise OutputError(
                    f"cannot write into {str(path)!r}: it is a file; allowed: a folder that is writable or can be created"
                )
            path.mkdir(parents=True, exist_ok=True)
        elif path.is_dir():
            raise OutputError(
                f"cannot write {str(path)!r}: it is a folder; allowed: a file path in an existing, writable folder"
            )
        if not folder:
            path = _real(path)
            where = path.parent
            if _kind(path) == "device":  # written through (atomic_path)
                return path
        probe = _temporary(path) if not folder else where / f".rheo-probe.{secrets.token_hex(4)}.tmp"
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise _output_error(path, e, up_front=True) from None
    _CHECKED.add(os.path.abspath(where))
    return path


def _temporary(path: Path) -> Path:
    """The temporary name next to `path` (the write probe uses the same length of name)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")


def _real(path: Path) -> Path:
    """An output that is a symbolic link is written where the link points (the link stays)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _kind(path: Path) -> str:
    """'missing', 'file', 'device' (a character device: written through), or refused: a FIFO, a
    socket or a block device would block a write or be replaced by a regular file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode):
        return "device"
    raise OutputError(
        f"cannot write {str(path)!r}: it is a FIFO, a socket or a block device; allowed: a regular file "
        f"path in an existing, writable folder, or a character device such as /dev/null"
    )


def _no_nul(path: str | os.PathLike) -> Path:
    if isinstance(path, str) and not path.strip():  # Path("") is "." : an empty name would write nothing, or the folder
        raise OutputError(f"cannot write {path!r}: an empty path; allowed: a file path in an existing, writable folder")
    path = Path(path)
    if "\x00" in str(path):  # the OS refuses it, as a ValueError that no OSError handler sees
        raise OutputError(
            f"cannot write {str(path)!r}: the path holds a NUL character; allowed: a file path in an "
            f"existing, writable folder"
        )
    return path
