"""Which of nvcc's passes compile a piece of code: the host pass (`__CUDA_ARCH__` undefined) and one device pass
per architecture. Code that every pass leaves out is never compiled, although no single `#if` may say so: legacy
code picks the `_sync` warp intrinsics itself with `#if __CUDACC_VER_MAJOR__ >= 9 && __CUDA_ARCH__ >= 300` /
`#define USE_SYNC`, then `#ifdef USE_SYNC` new `#else` old (the old branch is dead in the host pass by its own
`#if __CUDA_ARCH__`, in every device pass by `USE_SYNC`)."""

from __future__ import annotations

import tree_sitter as ts

from ..context import FileContext
from .builtins import dead_in_pass
from .inline_ptx import ARCHS

# `__CUDA_ARCH__` of every architecture nvcc 13.x compiles for (`nvcc --list-gpu-arch`: compute_75 to compute_121),
# as inline_ptx.py's ARCHS; older toolkits also build older ones, so passes are told apart only for targets >= 13.0
_PASSES_FROM = (13, 0)


def _passes() -> tuple[tuple[tuple[str, str | None], ...], ...]:
    return ((("__CUDA_ARCH__", None),),) + tuple((("__CUDA_ARCH__", str(a)),) for a in ARCHS)


def dead_for_target(node: ts.Node, ctx: FileContext, device_only: bool = False,
                    target: tuple[int, int] | None = None) -> bool:
    """`dead_in_pass` for the whole translation unit, or, where the file tests `__CUDA_ARCH__`, in every pass
    nvcc makes over it: the host pass (`__CUDA_ARCH__` undefined) and one device pass per architecture; with
    `device_only` (a rule whose removal breaks only the device passes: `breaks: device`), in every device pass.
    Code such as `#ifdef USE_SHFL_SYNC ... #else #if __CUDA_ARCH__ >= 300 __shfl_up(...)`, with `USE_SHFL_SYNC`
    defined for `__CUDACC_VER_MAJOR__ >= 9 && __CUDA_ARCH__ >= 300`, is compiled by no pass of CUDA 13 although
    no single condition says so. A g++ build of a `.cpp` has only the host pass; counting the device passes too
    can only keep code live, never make it dead."""
    if dead_in_pass(node, ctx, target):
        return True
    if (target or ctx.target) < _PASSES_FROM or b"__CUDA_ARCH__" not in ctx.source.data:
        return False
    return all(dead_in_pass(node, ctx, target, also) for also in _passes()[1 if device_only else 0:])
