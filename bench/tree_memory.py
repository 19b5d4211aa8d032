"""The peak memory of a process and every process it forked, sampled while they run.

`getrusage` gives one process's peak (`RUSAGE_SELF`) or the largest of its waited-for
children's (`RUSAGE_CHILDREN`), never what a process tree holds at once. A command that
shares its work out among forked processes is judged by the sum, so this samples it: every
`every` seconds, the resident set (RSS, each page counted in every process that maps it: an
upper bound) and the proportional set (PSS, shared pages split among their sharers) of this
process and all its descendants, keeping the largest sums seen.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import TracebackType

_MIB = 1024 * 1024


def descendants(root: int) -> list[int]:
    """The pids of every live process under `root` (not `root` itself)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def sizes_of(pid: int) -> tuple[int, int]:
    """Resident and proportional set sizes of one process in bytes (0, 0 once it is gone)."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    sizes: dict[str, int] = {}
    for line in rollup.splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            sizes[name] = int(rest.split()[0]) * 1024
    return sizes.get("Rss", 0), sizes.get("Pss", 0)


class TreePeak:
    """Samples this process's tree in a thread while the `with` block runs."""

    def __init__(self, every: float = 0.05) -> None:
        self.every = every
        self.rss_mib = 0.0
        self.pss_mib = 0.0
        self.processes = 1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-peak", daemon=True)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = os.getpid()
        while True:
            self.sample(me)
            if self._stop.wait(self.every):
                return

    def sample(self, root: int) -> None:
        """Take one sample of `root`'s tree and keep the larger sums."""
        pids = [root, *descendants(root)]
        sizes = [sizes_of(pid) for pid in pids]
        self.rss_mib = max(self.rss_mib, round(sum(s[0] for s in sizes) / _MIB, 1))
        self.pss_mib = max(self.pss_mib, round(sum(s[1] for s in sizes) / _MIB, 1))
        self.processes = max(self.processes, len(pids))
