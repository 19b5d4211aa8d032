"""The process-tree memory sampler sees forked children and sums what they hold at once."""

from __future__ import annotations

import os
import time

from bench.tree_memory import TreePeak, descendants, sizes_of

MIB = 1024 * 1024


def test_a_forked_child_holding_memory_is_counted_in_the_tree_peak() -> None:
    """A child that touches 64 MiB raises the tree's peak by about that, beyond its parent."""
    # a helper an earlier test of this process started stays in the tree too (the
    # multiprocessing resource tracker lives until its parent exits)
    others = len(descendants(os.getpid()))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: hold 64 MiB of touched pages until told to go
        os.close(write)
        held = bytearray(64 * MIB)
        held[::4096] = b"x" * len(held[::4096])
        os.read(read, 1)
        os._exit(0)
    os.close(read)
    try:
        time.sleep(0.5)
        assert [pid] == [p for p in descendants(os.getpid()) if p == pid]
        alone = TreePeak()
        alone.sample(pid)  # the child's tree alone
        before = sizes_of(os.getpid())[0] / MIB
        both = TreePeak()
        both.sample(os.getpid())
        after = sizes_of(os.getpid())[0] / MIB
    finally:
        os.write(write, b"x")
        os.waitpid(pid, 0)
    assert 64 <= alone.rss_mib  # what it touched (and what it shares with its parent)
    # the tree holds the parent and the child's own 64 MiB (the parent's size is read on
    # each side of the sample: a large test process grows and shrinks meanwhile)
    assert both.rss_mib >= min(before, after) + 64
    assert 2 + others == both.processes
    assert 64 <= both.pss_mib <= both.rss_mib
