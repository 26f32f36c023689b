"""Reading the files a user names (programs, `use` libraries, traces), and writing outputs.

One reader for all of them, as pyserq reads them: the bytes decoded as UTF-8
with no newline translation (a lone `\\r` is an ordinary character, not a
line end).  Only regular files are read — a named pipe would block forever and
a device like /dev/zero never ends — and at most `limit` bytes, so a huge file
is one clear error instead of exhausting memory.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import stat
import secrets
from pathlib import Path
from typing import Iterable

from sq.errors import SqError

# A program of 200,000 lines is a few megabytes; traces can be far longer.
PROGRAM_LIMIT = 256 * 1024 * 1024
TRACE_LIMIT = 4 * 1024 * 1024 * 1024


def path_argument(value, who: str, phase: str = "settings", hint: str = "") -> str:
    """A path given to the API (`str`, `bytes` or `os.PathLike`) as text; anything else (a
    number, None in the wrong place) is one SqError naming the keyword `who`, not os's TypeError.
    An empty path names no file: it is refused too (as a folder it would be the current one)."""
    if isinstance(value, (str, bytes, os.PathLike)):
        path = os.fsdecode(value)
        if not path:
            raise SqError(f"{who}: the path is empty", phase=phase)
        return path
    raise SqError(f"{who}: a path is text or os.PathLike, found {type(value).__name__}{hint}", phase=phase)


def cannot_write(who: str, path: str, reason: str, notes: tuple[str, ...] = ()) -> SqError:
    """The one wording of an output that cannot be written: "WHO: cannot write `PATH`: REASON"."""
    return SqError(f"{who}: cannot write `{path}`: {reason}", phase="settings", notes=notes)


def check_writable(path, who: str, formats: tuple[str, ...] | None = None) -> str:
    """The one decision whether the file `path`, given by `who` (a CLI flag or an API name),
    can be written, and (given `formats`) is of one of them by its extension: checked before
    any run, not after all of them. Returns the path as text; anything else is one SqError."""
    path = path_argument(path, who)
    reason = _why_not_writable(path)
    if reason:
        raise cannot_write(who, path, reason)
    if formats is not None and Path(path).suffix.lower() not in formats:
        raise SqError(f"{who}: cannot tell the format of `{path}` from its extension", phase="settings",
                      notes=(f"help: {who} takes {', '.join(formats)}",))
    return path


def _why_not_writable(path: str) -> str:
    """Why `path` cannot be written ("" when it can, as far as can be told before writing)."""
    if "\0" in path:
        return "the name contains a NUL byte"
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        return "it is a folder"
    if not folder.is_dir():
        return f"the folder `{folder}` does not exist"
    if not os.access(folder, os.W_OK):
        return f"the folder `{folder}` is not writable"
    if target.exists() and not os.access(target, os.W_OK):
        return "the file is not writable"
    return ""


@contextlib.contextmanager
def open_for_writing(path, who: str, binary: bool = False, notes: tuple[str, ...] = (), **options):
    """`path` checked (`check_writable`) and open for writing through `atomic_file`: a write
    that fails -- a full disk, a folder that vanished -- leaves the old file or none, never part
    of one, and is one SqError naming the file (`notes` say what is kept)."""
    path = check_writable(path, who)
    try:
        with atomic_file(path, binary, **options) as f:
            yield f
    except OSError as e:
        raise cannot_write(who, path, f"{e.strerror or e}; nothing was written there", notes) from None


def make_folder(folder: str, who: str) -> None:
    """Create `folder` (and its parents) unless it is there: a file there, or a folder that
    cannot be made, is one SqError starting with `who`."""
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError:
        raise SqError(f"{who} {folder}: exists and is not a folder", phase="settings") from None
    except OSError as e:
        raise SqError(f"{who} {folder}: cannot create the folder: {e.strerror} (os error {e.errno})",
                      phase="settings") from None


class Unreadable(Exception):
    """Why a file cannot be read: `reason` completes "cannot read F: …"."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def open_regular(path: str | os.PathLike, limit: int | None = None):
    """A regular file opened to read bytes (blocking); raises `Unreadable` with the reason
    otherwise: a directory (in pyserq's words), a pipe or device, a file over `limit` bytes."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer before fstat refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Unreadable(f"{e.strerror} (os error {e.errno})") from None
    except ValueError:  # an embedded NUL: the name cannot reach the OS
        raise Unreadable("file name contained an unexpected NUL byte") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):  # pyserq's words for it
            raise Unreadable(f"{os.strerror(errno.EISDIR)} (os error {errno.EISDIR})")
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file (a pipe or device is never read)")
        if limit is not None and info.st_size > limit:
            raise Unreadable(f"larger than {limit} bytes")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", closefd=True)
    except OSError as e:
        os.close(fd)
        raise Unreadable(f"{e.strerror} (os error {e.errno})") from None
    except Unreadable:
        os.close(fd)
        raise


def read_text(path: str | os.PathLike, limit: int = PROGRAM_LIMIT) -> str:
    """The file's text; raises `Unreadable` with the reason otherwise."""
    try:
        with open_regular(path, limit) as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise Unreadable(f"{e.strerror} (os error {e.errno})") from None
    except MemoryError:
        raise Unreadable("out of memory") from None
    if len(raw) > limit:  # it grew while being read
        raise Unreadable(f"larger than {limit} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("stream did not contain valid UTF-8") from None
    except MemoryError:
        raise Unreadable("out of memory") from None


@functools.lru_cache(maxsize=1)
def build_fingerprint() -> str:
    """A digest of the sq that is running: every Python module and compiled extension of the
    package, by content. Two builds that could compute a run differently differ here, where
    the version string (0.1.0 since the first commit) does not: the study cache's key."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for folder, dirs, names in sorted(os.walk(root)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith((".py", ".so", ".pyd"))):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, root).encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()[:16]


def write_atomic(path: str | os.PathLike, chunks: Iterable[str]) -> None:
    """Write the text `chunks` to `path` through a temporary file beside it,
    renamed over `path` only once all is written: a failure (a full disk, an
    interrupted run) leaves no partial file behind."""
    with atomic_file(path) as f:
        for chunk in chunks:
            f.write(chunk)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, binary: bool = False, **options):
    """A new file, open for writing, that becomes `path` when the block ends without an error
    (renamed over it, atomically) and is removed when it does not: `path` holds the old file or
    the whole new one, never part of it."""
    folder = os.path.dirname(os.fspath(path)) or "."
    fd, temp = _new_file(folder)
    try:
        with (os.fdopen(fd, "wb") if binary else
              os.fdopen(fd, "w", encoding="utf-8", **({"newline": ""} | options))) as f:
            yield f
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _new_file(folder: str) -> tuple[int, str]:
    """A new, empty temporary file in `folder`, open for writing: (fd, path). Its mode is
    0666 less the umask, as for any file the user makes (mkstemp's is 0600)."""
    while True:
        temp = os.path.join(folder, f".sq-{secrets.token_hex(6)}.part")
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), temp
        except FileExistsError:
            continue


def text_or_file(text: str, path, who: str) -> str | None:
    """The one rule of every `to_json(path=None)`: no path, the text is returned; a path, it is
    written there (`open_for_writing`) and None returned."""
    if path is None:
        return text
    with open_for_writing(path, who) as f:
        f.write(text)
    return None
