"""`parse.treesitter.parent_of`: the per-scan parent index is built for deep trees, not because a loaded machine
interrupted a lookup (the trigger is wall time spent in uncached `Node.parent`, each lookup capped)."""

from __future__ import annotations

import pytest

from cudamigrate.parse import treesitter as tsmod


class Clock:
    """perf_counter that advances `step` seconds at every call after the first of each pair (one lookup each)."""

    def __init__(self, step: float):
        self.now, self.step, self.calls = 0.0, step, 0

    def __call__(self) -> float:
        self.calls += 1
        if self.calls % 2 == 0:
            self.now += self.step
        return self.now


@pytest.fixture
def tree():
    body = b" ".join(b"int v%d = %d;" % (i, i) for i in range(30))
    root = tsmod.parse(b"void f() { " + body + b" }\n").root_node
    tsmod.reset_parent_cache()
    tsmod.register_roots([root])
    yield root
    tsmod.reset_parent_cache()


def _nodes(root, n):
    out, stack = [], [root]
    while stack and len(out) < n:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children)
    return out[1:]


def test_interrupted_lookups_do_not_index_a_shallow_tree(tree, monkeypatch):
    monkeypatch.setattr(tsmod.time, "perf_counter", Clock(0.010))  # each lookup "took" 10 ms: a preemption
    for node in _nodes(tree, 12):
        assert tsmod.parent_of(node) == node.parent
    assert tree.id not in tsmod._INDEXED  # 11 lookups count at most 11 x MAX_LOOKUP_S


def test_slow_lookups_still_index_the_tree(tree, monkeypatch):
    monkeypatch.setattr(tsmod.time, "perf_counter", Clock(0.0004))  # a deep tree's real cost, under the cap
    nodes = _nodes(tree, 60)
    for node in nodes:
        tsmod.parent_of(node)
    assert tree.id in tsmod._INDEXED
    assert all(tsmod.parent_of(n) == n.parent for n in nodes)
