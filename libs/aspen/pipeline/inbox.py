"""A follower's inbox: the folder ``aspen maintain --follow --inbox DIR`` ingests from, and a
boundary — whoever may drop a file there must not make the follower read anything else.

Each look (:func:`ingest_inbox`):

1. **resumes its claims**: what its claim folders still hold (a look that stopped between claim
   and move) is ingested again under the claim's token — a no-op when that ingest had
   committed — and moved on;
2. **refuses what is not a regular file**: an entry with an update file's name (not hidden,
   suffix of :data:`~aspen.lake.ingest.FORMATS`) that is a symbolic link, a fifo, a socket, a
   device or a folder is never opened: it is moved into ``<inbox>/refused/`` (moving a link
   moves the link, never its target) with one line, so it is reported once;
3. **claims the regular files** by ``os.rename`` into a claim folder of its own,
   ``<inbox>/.claimed/<lake key>/<token>/`` (the lake key is a digest of the lake's URI, the
   token unique per claim). A rename either moves the file or finds it gone, so two followers
   (of two lakes) sharing an inbox never both claim a file: the loser skips it without a line
   (counted in :class:`InboxTally`). A file gone otherwise, or changed between the listing and
   the claim (another file under its name, other size or time), is skipped with a line;
4. **ingests the claim** as one ingest batch with the token as its ``delivery``
   (:func:`aspen.lake.ingest.ingest_files`), then moves its files into ``<inbox>/ingested/``
   (a name taken there gets ``.1``, ``.2`` … before its suffix; never overwritten).

The folders the follower writes into or reads from (``ingested``, ``refused``, ``.claimed``
and those under it) must be real folders: a symbolic link (or a file) in their place is renamed
aside to a hidden ``.<name>.not-a-folder-<token>`` with a line, never followed.

>>> InboxTally(claimed=3, lost=1).lines()
['inbox: 3 file(s) claimed, 1 taken first by another follower']
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aspen.errors import ConfigError
from aspen.settings import Settings, normal_uri

__all__ = ["CLAIMED", "INGESTED", "REFUSED", "InboxTally", "claim_folder", "claimed_files",
           "inbox_folder", "ingest_inbox", "landed_files", "waiting_files"]

#: Where a follower moves the inbox files it ingested.
INGESTED = "ingested"
#: Where a follower moves the inbox entries with an update file's name that are no regular file.
REFUSED = "refused"
#: The hidden folder of the followers' claims inside the inbox.
CLAIMED = ".claimed"


@dataclass
class InboxTally:
    """What a follower's looks at its inbox did, over its life: files claimed, and files another
    follower claimed first (skipped without a line)."""

    claimed: int = 0
    lost: int = 0
    #: The files (device, inode) already reported as not claimable, so each is reported once.
    unclaimable: set[tuple[int, int]] = field(default_factory=set)

    def lines(self) -> list[str]:
        """A summary line, none when the inbox saw nothing."""
        if not self.claimed and not self.lost:
            return []
        return [f"inbox: {self.claimed} file(s) claimed, {self.lost} taken first by another "
                "follower"]


@dataclass(frozen=True)
class _Landed:
    path: Path
    identity: tuple[int, int, int, int]  # device, inode, size, modification time (ns)


def inbox_folder(text: str) -> Path:
    """The inbox named by ``text`` (a path or a ``file://`` URI) as its real local path,
    normalised as a lake root is (:func:`aspen.settings.normal_uri`); else
    :class:`~aspen.errors.ConfigError` in one line.

    >>> inbox_folder("file:///tmp/x/../inbox/")
    Traceback (most recent call last):
    ...
    aspen.errors.ConfigError: the inbox 'file:///tmp/x/../inbox/' has a '..' segment; name the \
folder itself
    >>> inbox_folder("/tmp/x/../inbox/")
    PosixPath('/tmp/inbox')
    """
    from urllib.parse import unquote, urlparse

    uri = normal_uri(text, "the inbox")
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ConfigError(f"the inbox {text!r} is not a local folder")
    return Path(unquote(parsed.path, errors="surrogateescape"))


def _update_name(name: str) -> bool:
    """Whether ``name`` is an update file's (not hidden: a writer writes ``.name`` or
    ``name.tmp`` and renames it when complete)."""
    from aspen.lake.ingest import FORMATS

    return not name.startswith(".") and Path(name).suffix.lower() in FORMATS


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _scan(folder: Path) -> tuple[list[_Landed], list[Path]]:
    """The regular update files in ``folder`` (oldest first) and the entries with an update
    file's name that are no regular file; nothing is opened or followed (``lstat``)."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    landed, irregular = [], []
    for entry in entries:
        if not _update_name(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:  # gone since the listing
            continue
        if stat.S_ISREG(st.st_mode):
            landed.append(_Landed(Path(entry.path), _identity(st)))
        else:
            irregular.append(Path(entry.path))
    landed.sort(key=lambda item: (item.identity[3], item.path.name))
    return landed, sorted(irregular)


def landed_files(inbox: Path) -> list[Path]:
    """The update files waiting in ``inbox``, oldest first: its regular files (a symbolic link
    is none, whatever it points to) with an update file's suffix, not hidden.

    >>> import tempfile
    >>> box = Path(tempfile.mkdtemp())
    >>> for name in ("b.jsonl", ".a.jsonl", "c.tmp"):
    ...     _ = (box / name).write_text("")
    >>> (box / "d.jsonl").symlink_to(box / "b.jsonl")
    >>> [p.name for p in landed_files(box)]
    ['b.jsonl']
    """
    return [item.path for item in _scan(inbox)[0]]


def _lake_key(settings: Settings) -> str:
    return hashlib.sha256(settings.lake_uri.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def claim_folder(settings: Settings, inbox: Path) -> Path:
    """The folder holding the claims of the follower of ``settings``'s lake in ``inbox``: one
    per lake, so followers of two lakes never resume each other's claims.

    >>> claim_folder(Settings(lake="/srv/lake"), Path("/srv/inbox")).parent
    PosixPath('/srv/inbox/.claimed')
    """
    return inbox / CLAIMED / _lake_key(settings)


def claimed_files(settings: Settings, inbox: Path) -> list[Path]:
    """The files the lake's follower claimed in ``inbox`` and has not moved on yet.

    >>> claimed_files(Settings(lake="/nonexistent/lake"), Path("/nonexistent/inbox"))
    []
    """
    found: list[Path] = []
    for claim in _real_subfolders(claim_folder(settings, inbox)):
        found += [item.path for item in _scan(claim)[0]]
    return found


def waiting_files(settings: Settings, inbox: Path) -> list[Path]:
    """The files of ``inbox`` the lake's follower has not ingested and moved on yet: landed or
    claimed.

    >>> waiting_files(Settings(lake="/nonexistent/lake"), Path("/nonexistent/inbox"))
    []
    """
    return landed_files(inbox) + claimed_files(settings, inbox)


def _real_subfolders(folder: Path) -> list[Path]:
    """The real folders (no symbolic links) directly in ``folder``, by name."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))


def _kind(mode: int) -> str:
    """What a non-regular entry is, in words.

    >>> _kind(stat.S_IFIFO), _kind(stat.S_IFLNK)
    ('a fifo', 'a symbolic link')
    """
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISFIFO, "a fifo"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return words
    return "not a regular file"


def _token() -> str:
    """A claim's token: its time first (claims resume in order), then 48 random bits."""
    return f"{time.time_ns():020d}-{secrets.token_hex(6)}"


def _real_folder(parent: Path, name: str, emit: Callable[[str], None]) -> Path:
    """``parent/name`` as a real folder: made when missing; anything else in its place (a
    symbolic link, a file) renamed aside to a hidden name, never followed."""
    path = parent / name
    while True:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            try:
                path.mkdir()
            except FileExistsError:  # another follower made it: look again
                continue
            return path
        if stat.S_ISDIR(mode):
            return path
        aside = parent / f".{name}.not-a-folder-{_token()}"
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            continue
        emit(f"inbox: {path} was {_kind(mode)}, not a folder: renamed aside to {aside.name}, "
             "not followed")


def _move_into(path: Path, folder: Path) -> Path:
    """Move ``path`` into ``folder`` under its name, else its name with ``.1``, ``.2`` … before
    its suffix; an entry there is never overwritten (a hard link, then the old name removed;
    a rename where no hard link can be made). Raises ``FileNotFoundError`` when ``path`` is
    gone (another follower moved it)."""
    stem, suffix = path.stem, path.suffix
    number = 0
    while True:
        target = folder / (path.name if number == 0 else f"{stem}.{number}{suffix}")
        number += 1
        try:
            os.link(path, target, follow_symlinks=False)
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise
        except OSError:  # a folder, or a file system without hard links
            if os.path.lexists(target):
                continue
            os.rename(path, target)
            return target
        os.unlink(path)
        return target


def _refuse(inbox: Path, path: Path, why: str, emit: Callable[[str], None]) -> None:
    """Move ``path`` (never opened nor followed) into ``<inbox>/refused/`` with a line; nothing
    when it is gone (another follower refused it)."""
    refused = _real_folder(inbox, REFUSED, emit)
    try:
        target = _move_into(path, refused)
    except FileNotFoundError:
        return
    emit(f"inbox: {path.name} {why}: not read, moved to {REFUSED}/{target.name}")


def _refuse_irregular(inbox: Path, paths: list[Path], emit: Callable[[str], None]) -> None:
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        _refuse(inbox, path, f"is {_kind(mode)}, not a regular file", emit)


def _claim(inbox: Path, folder: Path, landed: list[_Landed], tally: InboxTally,
           emit: Callable[[str], None]) -> list[Path]:
    """Rename each of ``landed`` into the claim ``folder``; the files claimed unchanged."""
    claimed = []
    for item in landed:
        target = folder / item.path.name
        try:
            os.rename(item.path, target)
        except FileNotFoundError:
            if _claimed_elsewhere(inbox, item):
                tally.lost += 1  # another follower's: not ours to mention
            else:
                emit(f"inbox: {item.path.name} was gone before it could be claimed; skipped")
            continue
        except PermissionError as err:  # e.g. another user's file in a sticky inbox
            if item.identity[:2] not in tally.unclaimable:
                tally.unclaimable.add(item.identity[:2])
                emit(f"inbox: {item.path.name} cannot be claimed ({err.strerror}); left "
                     "unread")
            continue
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            emit(f"inbox: {item.path.name} was gone right after its claim; skipped")
            continue
        if not stat.S_ISREG(st.st_mode):
            _refuse(inbox, target, f"became {_kind(st.st_mode)} before its claim", emit)
        elif _identity(st) != item.identity:
            _give_back(inbox, target, emit)
        else:
            claimed.append(target)
    tally.claimed += len(claimed)
    return claimed


def _claimed_elsewhere(inbox: Path, item: _Landed) -> bool:
    """Whether the file of ``item`` (the same inode) is in some follower's claim folder or was
    already moved to ``ingested/`` by one."""
    name = item.path.name
    places = [inbox / INGESTED / name]
    for lake in _real_subfolders(inbox / CLAIMED):
        places += [claim / name for claim in _real_subfolders(lake)]
    for place in places:
        try:
            st = os.lstat(place)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == item.identity[:2]:
            return True
    return False


def _give_back(inbox: Path, path: Path, emit: Callable[[str], None]) -> None:
    """Put a file that changed between listing and claim back into the inbox for the next look
    (when its name there was taken meanwhile, the claim folder keeps it: the next look resumes
    it)."""
    target = inbox / path.name
    try:
        os.link(path, target, follow_symlinks=False)
    except FileExistsError:
        emit(f"inbox: {path.name} changed while it was claimed; kept for the next look")
        return
    except OSError:  # a file system without hard links
        if os.path.lexists(target):
            emit(f"inbox: {path.name} changed while it was claimed; kept for the next look")
            return
        os.rename(path, target)
    else:
        os.unlink(path)
    emit(f"inbox: {path.name} changed while it was claimed; left for the next look")


def _ingest_claim(settings: Settings, inbox: Path, folder: Path, emit: Callable[[str], None],
                  *, resumed: bool = False) -> None:
    """Ingest what claim ``folder`` holds, with its token as the delivery, then move it into
    ``<inbox>/ingested/`` and remove the folder (``resumed``: a claim an earlier look left)."""
    from aspen.lake.ingest import ingest_files

    landed, irregular = _scan(folder)
    if resumed and (landed or irregular):
        emit(f"inbox: resuming claim {folder.name}")
    _refuse_irregular(inbox, irregular, emit)
    if landed:
        files = [item.path for item in landed]
        try:
            report = ingest_files(settings, files, delivery=folder.name)
        except (ConfigError, FileNotFoundError) as err:  # a claimed file removed under it
            emit(f"inbox: claim {folder.name}: {err}; what is left is ingested at the next "
                 "look")
            return
        for line in report.lines():
            emit(line)
        done = _real_folder(inbox, INGESTED, emit)
        for path in files:
            try:
                _move_into(path, done)
            except FileNotFoundError:  # moved on by a look that resumed the same claim
                pass
    _remove_if_empty(folder)


def ingest_inbox(settings: Settings, inbox: Path, tally: InboxTally | None = None) -> list[str]:
    """One look at ``inbox`` for the follower of ``settings``'s lake: resume its claims, refuse
    what is no regular file, claim the files landed and ingest them as one ingest batch (see the
    module docstring); the lines to print. ``tally`` counts the claims over many looks.

    >>> import tempfile
    >>> box = Path(tempfile.mkdtemp())
    >>> (box / "x.jsonl").symlink_to("/etc/hostname")
    >>> ingest_inbox(Settings(lake=str(box / "lake")), box)
    ['inbox: x.jsonl is a symbolic link, not a regular file: not read, moved to refused/x.jsonl']
    """
    lines: list[str] = []
    tally = tally if tally is not None else InboxTally()
    landed, irregular = _scan(inbox)
    mine = inbox / CLAIMED / _lake_key(settings)
    if not landed and not irregular and not os.path.lexists(mine):
        return lines  # an idle look: one listing
    claims = _real_folder(_real_folder(inbox, CLAIMED, lines.append), mine.name, lines.append)
    for folder in _real_subfolders(claims):  # left by a look that stopped before moving on
        _ingest_claim(settings, inbox, folder, lines.append, resumed=True)
    _refuse_irregular(inbox, irregular, lines.append)
    if landed:
        folder = claims / _token()
        folder.mkdir(mode=0o700)
        if _claim(inbox, folder, landed, tally, lines.append):
            _ingest_claim(settings, inbox, folder, lines.append)
        else:
            _remove_if_empty(folder)  # a file kept for the next look stays in it
    return lines


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty: the next look resumes what it holds
        pass
