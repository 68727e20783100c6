#!/usr/bin/env python3
"""Generate `rules/catalog/<library>/CM1xxx-*.yaml` from the CUDA API change catalog.

    python scripts/gen_catalog_rules.py            # (re)write rules/catalog/
    python scripts/gen_catalog_rules.py --check    # exit 1 if rules/catalog/ differs from what would be generated
    python scripts/gen_catalog_rules.py --out DIR  # write elsewhere (tests compare a temp dir with the repo)

Input: `cudamigrate/data/cuda_api_changes.csv` (1081 rows: api, kind, library, deprecated_in,
removed_in, replacement, fix_kind, notes, source), and `cudamigrate/data/api_inventory.json` (written from the
CUDA 13.0 and last 12.x headers by scripts/build_api_inventory.py): each inventory entry that no CSV row and
no hand-written rule reports, and that cudamigrate/data/api_inventory_exclusions.yaml does not exclude, becomes
one more row (`cudamigrate.knowledge.inventory.catalog_row`: deprecated -> deprecated_in 13.0, or 12.9 at the latest when
the last 12.x header already marked it; removed -> removed_in 13.0; the header's message names the
replacement; a prototype whose argument count changed -> a rule for calls with the old count).

Which rows become rules
-----------------------
* A row is skipped when a hand-written rule (any `rules/**/CM*.yaml` outside `rules/catalog/`) lists
  its key `library:api` under `catalog:`. Those keys are read every time the generator runs, so
  merging a hand-written rule and re-running the generator removes the generated duplicate.
* A row that is not a migration (`not_a_migration`: neither deprecated nor removed, and its change compiles
  unchanged, such as the cuSPARSE Generic API's const descriptors) gets no rule: a finding would tell the
  user to migrate code that needs nothing, or to migrate to the API it already uses.
* `EXPLICIT_EXCLUSIONS` below names the APIs that hand-written rules are being written for in
  parallel (migrations whose argument rewrite needs code, texture/surface references, ...); they are
  skipped even before those rules declare their `catalog:` keys.

How rows are grouped (and why)
------------------------------
One rule per (library, fix kind, deprecated_in, removed_in, matcher shape, fix applicability).
`deprecated_in`/`removed_in` are rule-level fields: they drive `--from/--to` selection
(`scan/selection.py`: `in_window`), the version phrase in messages ("removed in CUDA 13.0") and the cost model, so
rows with different versions cannot share a rule. Within a group everything that differs per API
lives in `data.apis[<name>]` (replacement, advice, the row's source and catalog wording), and the
message template looks it up with `{{ data.apis[name] }}`, so every finding still names the exact
API, its replacement, the version and the source row. The matcher shape follows the row's kind:
functions are matched in call and value (function pointer) position, types in type/value/call
position (C++ functor types are constructed), enumerators and macros in value/call/type position.
C++ APIs are matched by qualified name only (`thrust::identity`, not `identity`), resolved through
`using namespace`/aliases by the engine. Rows that need their own edits (argument rewrites,
template-argument surgery) or their own conditions get a rule of their own.

Every `rename` row gets an automatic fix (`replace: name`): `safe` where the replacement is a
drop-in (same parameters, same header reach), `unsafe` where the catalog's replacement differs in a
way the reviewer must check (member names, template arguments, headers), with the reason in
`data.apis[name].caveat`. `include` rows rewrite the `#include`. `signature` rows get an argument
rewrite where it is uniform, else a finding with the exact new form. `manual` rows get findings.

Stable ids
----------
`rules/catalog/ids.yaml` maps each group key to its id. Existing keys keep their id; new keys get
the next free id in CM1000-CM1999 (in sorted key order); ids of groups that disappear are never
reused. Commit ids.yaml together with the rules.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import re
import shutil
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from cudamigrate.knowledge import inventory, releases  # noqa: E402

CSV_PATH = ROOT / "cudamigrate" / "data" / "cuda_api_changes.csv"
RULES = ROOT / "rules"
OUT = RULES / "catalog"
IDS_NAME = "ids.yaml"
ID_MIN, ID_MAX = 1000, 1999

LIBRARY_TITLES = {
    "cudart": "CUDA Runtime", "driver": "CUDA Driver API", "cusparse": "cuSPARSE", "cublas": "cuBLAS",
    "cufft": "cuFFT", "nvrtc": "NVRTC", "cub": "CUB", "thrust": "Thrust", "libcudacxx": "libcu++",
    "device": "CUDA device API", "cusolver": "cuSOLVER", "curand": "cuRAND", "npp": "NPP", "nvjpeg": "nvJPEG",
    "nvjitlink": "nvJitLink", "nvfatbin": "nvFatbin",
}

# ---------------------------------------------------------------------------------------------
# Rows left to hand-written rules (see the brief of issue "CUDA 12/13 removals and deprecations").
# Each entry: library -> regex over the CSV `api` column (full match).
EXPLICIT_EXCLUSIONS: dict[str, list[str]] = {
    "cudart": [
        r"cudaMemPrefetchAsync", r"cudaMemAdvise",  # int device -> cudaMemLocation
        r"cudaGraphInstantiate",
        r"cudaStreamGetCaptureInfo.*",
        r"cudaGraphAddNode", r"cudaGraphGetEdges", r"cudaGraphNodeGetDependencies",
        r"cudaGraphNodeGetDependentNodes", r"cudaGraphAddDependencies", r"cudaGraphRemoveDependencies",
        r"cudaStreamUpdateCaptureDependencies",
        r"cudaThread\w+",
        r"cudaDeviceProp::\w+",
        r"(make_)?(double4|long4|ulong4|longlong4|ulonglong4)",
        r"cudaLaunchCooperativeKernelMultiDevice",  # with cooperative_groups multi-grid
        # texture and surface references
        r"texture|textureReference|surfaceReference",
        r"cudaBindTexture\w*|cudaUnbindTexture|cudaGetTextureAlignmentOffset|cudaGetTextureReference",
        r"cudaBindSurfaceToArray|cudaGetSurfaceReference",
    ],
    "driver": [
        r"cuMemPrefetchAsync", r"cuMemAdvise", r"cuGraphInstantiate", r"cuCtxCreate",
        r"cuTexRef\w+|cuSurfRef\w+|cuModuleGetTexRef|cuModuleGetSurfRef|cuParamSetTexRef",
    ],
    "device": [
        r"__shfl(_up|_down|_xor)?", r"__ballot|__any|__all", r"ballot / any / all.*",
        r"mul24|umul24|mulhi|mul64hi|saturate|float_as_int|int_as_float|float_as_uint|uint_as_float",
        r"float2int|float2uint|int2float|uint2float",
        r"cooperative_groups::multi_grid_group.*",
        r"texture<.*",
    ],
    "thrust": [r"thrust::identity<T>", r"thrust::unary_function", r"thrust::binary_function"],
    "cub": [
        r"cub::Sum", r"cub::Max", r"cub::Min", r"CUB_MAX\(a, b\)", r"CUB_MIN\(a, b\)",
        r"CUB_QUOTIENT_CEILING\(a, b\)",
        r"cub::(Counting|Constant|Transform)InputIterator",
        r"cub::Device\* \(overloads with trailing bool debug_synchronous\)",
    ],
    "cufft": [r"CUFFT_INCOMPLETE_PARAMETER_LIST|CUFFT_LICENSE_ERROR|CUFFT_PARSE_ERROR"],
}


# Once the hand-written rules are merged and list their `catalog:` keys, set this to False (or run with
# --no-explicit-exclusions) so that only those keys decide what is left out.
USE_EXPLICIT_EXCLUSIONS = False


def explicitly_excluded(library: str, api: str) -> bool:
    for rx in EXPLICIT_EXCLUSIONS.get(library, []):
        if re.fullmatch(rx, api):
            return True
    # the cuSPARSE legacy API (removed in 10.2/11.x/12.0) is a hand-written migration
    return False


def not_a_migration(row: dict) -> str | None:
    """Why a row must not produce a finding at all, or None.

    A finding tells the user to change code. A row that is neither deprecated nor removed and whose
    only history is a signature change that still compiles is not a migration: the cuSPARSE Generic
    API rows (`cusparseSpMV`, `cusparseDestroyDnVec`, ...) carry HIPIFY's C=12.0 because cuSPARSE
    12.0 made their descriptor parameters `const` (`cusparseConstSpMatDescr_t`, `cusparseConstDnVecDescr_t`,
    nvidia-cusparse 12.6.3.3 cusparse.h:5022); a non-const descriptor converts implicitly, none of
    them is marked CUSPARSE_DEPRECATED there, and the Generic API is what the legacy routines
    migrate *to*. Flagging them told users to migrate to the API they already use.
    """
    if row["deprecated_in"].strip() or row["removed_in"].strip() or row["fix_kind"] != "manual":
        return None
    if (row["library"] == "cusparse" and "C=12.0" in row["notes"] and "still declared in CUDA 13.0" in row["notes"]
            and "Generic API" in row["notes"]):
        return ("not a migration: cuSPARSE Generic API whose 12.0 change (const descriptor parameters) compiles unchanged; "
                "not deprecated in the 13.0 cusparse.h")
    return None


def cusparse_legacy(row: dict) -> bool:
    return row["library"] == "cusparse" and bool(row["removed_in"].strip())


# ---------------------------------------------------------------------------------------------
# Names: how a row's `api` text is matched in code.

NAME_OVERRIDES: dict[str, list[str]] = {
    "thrust:THRUST_DEVICE_COMPILER*": ["THRUST_DEVICE_COMPILER", "THRUST_DEVICE_COMPILER_UNKNOWN", "THRUST_DEVICE_COMPILER_MSVC",
                                       "THRUST_DEVICE_COMPILER_GCC", "THRUST_DEVICE_COMPILER_CLANG", "THRUST_DEVICE_COMPILER_NVCC"],
    "cub:CUB_DEVICE_COMPILER*": ["CUB_DEVICE_COMPILER", "CUB_DEVICE_COMPILER_UNKNOWN", "CUB_DEVICE_COMPILER_MSVC",
                                 "CUB_DEVICE_COMPILER_GCC", "CUB_DEVICE_COMPILER_CLANG", "CUB_DEVICE_COMPILER_NVCC"],
    "thrust:THRUST_HOST_COMPILER*": ["THRUST_HOST_COMPILER", "THRUST_HOST_COMPILER_UNKNOWN", "THRUST_HOST_COMPILER_MSVC",
                                     "THRUST_HOST_COMPILER_GCC", "THRUST_HOST_COMPILER_CLANG", "THRUST_HOST_COMPILER_INTEL"],
    "cub:CUB_HOST_COMPILER*": ["CUB_HOST_COMPILER", "CUB_HOST_COMPILER_UNKNOWN", "CUB_HOST_COMPILER_MSVC",
                               "CUB_HOST_COMPILER_GCC", "CUB_HOST_COMPILER_CLANG", "CUB_HOST_COMPILER_INTEL"],
    # CUB's dispatch kernels are all named Device...Kernel; a bare `*Kernel` glob would send every
    # user kernel name through the parser
    "cub:cub::*Kernel": ["cub::Device*Kernel"],
    "cub:cub::Agent*": ["cub::Agent*"],
    "cub:cub::Device*Policy": ["cub::Device*Policy"],
    "thrust:thrust::async::*": ["thrust::async::*"],
    "thrust:thrust::cuda_cub::core::*": ["thrust::cuda_cub::core::*"],
    "thrust:thrust::<functor>::first_argument_type / second_argument_type / result_type": [
        "thrust::*::first_argument_type", "thrust::*::second_argument_type", "thrust::*::result_type"],
    "thrust:thrust::plus/minus/.../maximum/minimum function objects": [
        "thrust::" + f for f in ("plus", "minus", "multiplies", "divides", "modulus", "negate", "equal_to", "not_equal_to",
                                 "greater", "less", "greater_equal", "less_equal", "logical_and", "logical_or",
                                 "logical_not", "bit_and", "bit_or", "bit_xor", "maximum", "minimum")],
    # `_ReadWriteBarrier` is MSVC's compiler intrinsic; only Thrust's own spelling of it is the removed API
    "thrust:_ReadWriteBarrier": ["thrust::_ReadWriteBarrier", "thrust::detail::_ReadWriteBarrier"],
    "device:cudaDeviceSynchronize (in device code)": ["cudaDeviceSynchronize"],
    "cub:cub::DeviceReduce::ArgMin / ArgMax (single KeyValuePair output iterator overload)": [
        "cub::DeviceReduce::ArgMin", "cub::DeviceReduce::ArgMax"],
    "cub:cub::DeviceHistogram (overloads taking C arrays)": [
        "cub::DeviceHistogram::MultiHistogramEven", "cub::DeviceHistogram::MultiHistogramRange"],
    "cub:cub::CachingAllocator(..., bool debug)": ["cub::CachingDeviceAllocator"],
    "cub:cub::Device* (overloads with trailing bool debug_synchronous)": ["cub::Device*::*"],
    "cub:cub::Block* (trailing int LEGACY_PTX_ARCH template parameter)": [
        "cub::BlockReduce", "cub::BlockScan", "cub::BlockLoad", "cub::BlockStore", "cub::BlockExchange",
        "cub::BlockHistogram", "cub::BlockDiscontinuity", "cub::BlockAdjacentDifference", "cub::BlockShuffle",
        "cub::BlockRadixSort"],
    "cudart:cudaGraphKernelNodeCopyAttributes": ["cudaGraphKernelNodeCopyAttributes"],
    "device:ballot / any / all (bool overloads)": ["ballot", "any", "all"],
    "device:texture<T,dim,mode> / surface<T,dim> (device texture/surface references)": ["texture", "surface"],
    "device:cooperative_groups::multi_grid_group / this_multi_grid()": [
        "cooperative_groups::multi_grid_group", "cooperative_groups::this_multi_grid"],
}

# template-argument count of the CCCL 2.x class templates whose last parameter was LEGACY_PTX_ARCH
LEGACY_PTX_ARCH_ARITY = {
    "cub::BlockReduce": 6, "cub::BlockScan": 6, "cub::BlockLoad": 7, "cub::BlockStore": 7, "cub::BlockExchange": 7,
    "cub::BlockHistogram": 8, "cub::BlockDiscontinuity": 5, "cub::BlockAdjacentDifference": 5, "cub::BlockShuffle": 5,
    "cub::BlockRadixSort": 11,
}


def api_names(row: dict) -> list[str]:
    key = f"{row['library']}:{row['api']}"
    if key in NAME_OVERRIDES:
        return NAME_OVERRIDES[key]
    api = row["api"].strip()
    out = []
    for part in api.split(" / "):
        part = part.strip()
        part = re.sub(r"\(.*\)$", "", part).strip()  # CUB_MAX(a, b), cub::LaneId()
        part = re.sub(r"<[^<>]*>", "", part)  # cub::FpLimits<T>, cub::Traits<T>::Max
        if "[_t]" in part:
            out += [part.replace("[_t]", ""), part.replace("[_t]", "_t")]
            continue
        out.append(part)
    for n in out:
        if not re.fullmatch(r"[A-Za-z_]\w*(::(\w+|\*))*", n):
            raise SystemExit(f"cannot derive a matchable name from catalog api {api!r} ({key}); add NAME_OVERRIDES")
    return out


def norm_version(text: str) -> str | None:
    text = (text or "").strip()
    if not text:
        return None
    m = re.search(r"CUDA (\d+\.\d+)", text) or re.search(r"(?<![\w.])(\d+\.\d+)(?![\w.])", text)
    return m.group(1) if m else None


KIND_CLASS = {"function": "functions", "intrinsic": "functions", "signature_change": "functions", "type": "types",
              "enum": "constants", "macro": "constants", "header": "headers", "struct_field": "fields"}


def roles_for(row: dict) -> list[str]:
    kind = row["kind"]
    if kind in ("function", "intrinsic", "signature_change"):
        return ["call", "value"]
    if kind == "type":
        # C++ functor/trait types are also constructed (`cub::Difference()`); C types only name types,
        # so a variable that happens to share a struct tag's name (`pruneInfo`) is not reported
        return ["type", "value", "call"] if row["library"] in ("cub", "thrust", "libcudacxx") else ["type"]
    return ["value", "call", "type"]  # enum, macro


# ---------------------------------------------------------------------------------------------
# Renames: the text the fix writes, and whether it is a drop-in.

def clean_replacement(text: str) -> str:
    t = text.strip()
    t = re.sub(r"\(\)$", "", t)
    t = re.sub(r"\([a-z, ]+\)$", "", t)  # cuda::std::max(a, b)
    return t.strip()


# api key -> (text written by the fix, applicability, caveat shown in the message or None)
RENAME_FIX: dict[str, tuple[str, str, str | None]] = {
    "cub:cub::Difference": ("cuda::std::minus<>", "safe", None),
    "cub:cub::Division": ("cuda::std::divides<>", "safe", None),
    "cub:cub::Equality": ("cuda::std::equal_to<>", "safe", None),
    "cub:cub::Inequality": ("cuda::std::not_equal_to<>", "safe", None),
    "cub:cub::ArrayWrapper": ("cuda::std::array", "unsafe",
                              "cub::ArrayWrapper<T, N> exposed its elements as `.array`; cuda::std::array is indexed directly"),
    "cub:cub::BFI": ("cuda::bitfield_insert", "unsafe", "check the argument order against cuda::bitfield_insert(dest, source, start, width)"),
    "cub:cub::BFE": ("cuda::bitfield_extract", "unsafe", "check the argument order against cuda::bitfield_extract(value, start, width)"),
    "cub:cub::PRMT": ("cuda::ptx::prmt", "unsafe", "cuda::ptx::prmt takes the selector as its last argument; check the order"),
    "cub:cub::DivideAndRoundUp": ("cuda::ceil_div", "unsafe",
                                  "the catalog names cuda::round_up, but DivideAndRoundUp(n, d) computes ceil(n / d), which is cuda::ceil_div"),
    "cub:cub::FpLimits<T>": ("cuda::std::numeric_limits", "unsafe",
                             "FpLimits<T>::Max()/Lowest() become numeric_limits<T>::max()/lowest()"),
    "cub:cub::max": ("cuda::std::max", "unsafe", "cuda::std::max needs both arguments of the same type"),
    "cub:cub::min": ("cuda::std::min", "unsafe", "cuda::std::min needs both arguments of the same type"),
    "thrust:thrust::optional<T>": ("cuda::std::optional", "unsafe",
                                   "thrust::optional<T&> has no cuda::std equivalent; thrust::nullopt/make_optional become cuda::std::nullopt/make_optional"),
    "cub:CUB_ROUND_UP_NEAREST(a, b)": ("cuda::round_up", "safe", None),
    "cub:cub::Sum": ("cuda::std::plus<>", "safe", None),
    "cub:cub::Max": ("cuda::maximum<>", "safe", None),
    "cub:cub::Min": ("cuda::minimum<>", "safe", None),
    "cub:CUB_MAX(a, b)": ("cuda::std::max", "unsafe", "cuda::std::max needs both arguments of the same type"),
    "cub:CUB_MIN(a, b)": ("cuda::std::min", "unsafe", "cuda::std::min needs both arguments of the same type"),
    "cub:CUB_QUOTIENT_CEILING(a, b)": ("cuda::ceil_div", "safe", None),
    "cub:cub::CountingInputIterator": ("thrust::counting_iterator", "unsafe",
                                       "the second template argument (OffsetT) has no counterpart in thrust::counting_iterator"),
    "cub:cub::ConstantInputIterator": ("thrust::constant_iterator", "unsafe",
                                       "the second template argument (OffsetT) has no counterpart in thrust::constant_iterator"),
    "cub:CUB_ROUND_DOWN_NEAREST(a, b)": ("cuda::round_down", "safe", None),
    "thrust:THRUST_STATIC_ASSERT(expr)": ("static_assert", "safe", None),
}

def rename_target(row: dict) -> tuple[str | None, str, str | None]:
    """(name, applicability, caveat) for a rename row without an entry in RENAME_FIX."""
    repl = row["replacement"].strip()
    name = clean_replacement(repl)
    if re.fullmatch(r"[A-Za-z_][\w:<>]*(\[_t\])?", name):
        return name, "safe", None
    m = re.fullmatch(r"([A-Za-z_]\w*) \(same [^)]*\) or .*", repl)
    if m:  # double4 -> double4_16a (same 16-byte alignment) or double4_32a
        return m.group(1), "safe", f"the catalog's alternatives: {repl}"
    alts = [clean_replacement(a) for a in repl.split(" / ")]
    if len(alts) > 1 and all(re.fullmatch(r"[A-Za-z_][\w:]*", a) for a in alts):
        return alts[0], "unsafe", f"the catalog lists {' or '.join(alts)}; pick the one matching the argument types"
    return None, "manual", None


# rows whose fix is not a plain name replacement: api key -> dict(edits=..., applicability=..., caveat=...)
TEXT_FIX: dict[str, dict] = {
    "cub:cub::BinaryOpHasIdxParam::HAS_PARAM": {
        "applicability": "safe",
        "edits": [{"replace": "node", "with": "{{ text | replace('HAS_PARAM', 'value') }}"}],
    },
    "cub:cub::Int2Type": {
        "applicability": "unsafe", "caveat": "Int2Type<N>::VALUE becomes integral_constant<int, N>::value",
        "edits": [{"when": {"all": [{"role": ["type", "call"]}, {"not": {"var": {"scope": True}}}, {"text_matches": "<"}]},
                   "replace": "node",
                   "with": "cuda::std::integral_constant<int, {{ text[text.index('<') + 1:] | trim }}"}],
    },
    "cub:cub::Traits<T>::Max()": {
        "applicability": "unsafe", "caveat": "for floating-point T, numeric_limits<T>::max() is the largest finite value as Traits<T>::Max() was",
        "edits": [{"when": {"role": "call"}, "replace": "node",
                   "with": "{{ text | replace('cub::Traits<', 'cuda::std::numeric_limits<') | replace('::Max(', '::max(') }}"}],
    },
    "cub:cub::Traits<T>::Min()": {
        "applicability": "unsafe",
        "caveat": "for floating-point T use numeric_limits<T>::lowest(): numeric_limits<T>::min() is the smallest positive value",
        "edits": [{"when": {"role": "call"}, "replace": "node",
                   "with": "{{ text | replace('cub::Traits<', 'cuda::std::numeric_limits<') | replace('::Min(', '::min(') }}"}],
    },
    "thrust:thrust::iterator_pointer[_t]<T>": {
        "applicability": "unsafe", "caveat": "`thrust::iterator_pointer<T>::type` needs a hand edit",
        "edits": [{"when": {"name": "thrust::iterator_pointer_t"}, "replace": "node",
                   "with": "typename cuda::std::iterator_traits<{{ text[text.index('<') + 1:text.rindex('>')] | trim }}>::pointer"}],
    },
}
# the int-like iterator aliases: thrust::iterator_X_t<T> -> cuda::std::iter_X_t<T> is a plain rename
TEXT_FIX_NAMES = {
    "thrust:thrust::iterator_pointer[_t]<T>": None,
}


def iter_alias_fix(member: str) -> dict:
    return {
        "applicability": "unsafe", "caveat": f"`thrust::iterator_{member}<T>::type` needs a hand edit",
        "edits": [{"when": {"name": f"thrust::iterator_{member}_t"}, "replace": "node",
                   "with": "typename cuda::std::iterator_traits<{{ text[text.index('<') + 1:text.rindex('>')] | trim }}>::"
                           + {"value": "value_type", "reference": "reference", "difference": "difference_type"}[member]}],
    }


# ---------------------------------------------------------------------------------------------
# Signature rows with a uniform argument rewrite: api key -> rule fragment.

def _sig(params: list[str], where=None, edits=None, app="unsafe", caveat=None, match_name=None):
    return {"params": params, "where": where, "edits": edits, "applicability": app, "caveat": caveat, "name": match_name}


SIGNATURE: dict[str, dict] = {
    # The legacy array copies are deprecated, not removed (cuda_runtime_api.h 13.0:7584-7770, __CUDA_DEPRECATED), and
    # copy `count` bytes row-major, wrapping into the next rows of the array. A 1-row cudaMemcpy2D*Array* call
    # with width = count is only equivalent when the copy stays inside one row: for a 512x512 array the 1-row
    # rewrite returns cudaErrorInvalidValue on the H200 where the original succeeds (issue 11). The row width is
    # a run-time property of the array, so there is no rewrite that is right without it: manual.
    "cudart:cudaMemcpyToArray": _sig(
        ["dst", "wOffset", "hOffset", "src", "count", "kind"], app="manual",
        caveat="no automatic fix: the old call copies `count` bytes row by row, wrapping into the next rows of the array, "
               "and cudaMemcpy2DToArray needs the row count. For a copy of whole rows (wOffset == 0, count a multiple "
               "of the row size rowBytes = array width x element size, see cudaArrayGetInfo) write "
               "cudaMemcpy2DToArray(dst, 0, hOffset, src, rowBytes, rowBytes, count / rowBytes, kind); only a copy "
               "that stays inside one row (wOffset + count <= rowBytes) is cudaMemcpy2DToArray(dst, wOffset, hOffset, "
               "src, count, count, 1, kind); otherwise split the partial first and last rows. The old call still "
               "compiles (deprecated, not removed)"),
    "cudart:cudaMemcpyToArrayAsync": _sig(
        ["dst", "wOffset", "hOffset", "src", "count", "kind", "stream"], app="manual",
        caveat="no automatic fix: the old call copies `count` bytes row by row, wrapping into the next rows of the array, "
               "and cudaMemcpy2DToArrayAsync needs the row count. For whole rows (wOffset == 0, count a multiple of "
               "rowBytes = array width x element size, see cudaArrayGetInfo) write cudaMemcpy2DToArrayAsync(dst, 0, "
               "hOffset, src, rowBytes, rowBytes, count / rowBytes, kind, stream); a 1-row copy (width count, height 1) "
               "is right only when wOffset + count <= rowBytes. The old call still compiles (deprecated, not removed)"),
    "cudart:cudaMemcpyFromArray": _sig(
        ["dst", "src", "wOffset", "hOffset", "count", "kind"], app="manual",
        caveat="no automatic fix: the old call copies `count` bytes row by row, wrapping into the next rows of the array, "
               "and cudaMemcpy2DFromArray needs the row count. For whole rows (wOffset == 0, count a multiple of "
               "rowBytes = array width x element size, see cudaArrayGetInfo) write cudaMemcpy2DFromArray(dst, rowBytes, "
               "src, 0, hOffset, rowBytes, count / rowBytes, kind); a 1-row copy (width count, height 1) is right only "
               "when wOffset + count <= rowBytes. The old call still compiles (deprecated, not removed)"),
    "cudart:cudaMemcpyFromArrayAsync": _sig(
        ["dst", "src", "wOffset", "hOffset", "count", "kind", "stream"], app="manual",
        caveat="no automatic fix: the old call copies `count` bytes row by row, wrapping into the next rows of the array, "
               "and cudaMemcpy2DFromArrayAsync needs the row count. For whole rows (wOffset == 0, count a multiple of "
               "rowBytes = array width x element size, see cudaArrayGetInfo) write cudaMemcpy2DFromArrayAsync(dst, "
               "rowBytes, src, 0, hOffset, rowBytes, count / rowBytes, kind, stream); a 1-row copy (width count, "
               "height 1) is right only when wOffset + count <= rowBytes. The old call still compiles (deprecated, not removed)"),
    "cudart:cudaMemcpyArrayToArray": _sig(
        ["dst", "wOffsetDst", "hOffsetDst", "src", "wOffsetSrc", "hOffsetSrc", "count", "kind"], app="manual",
        caveat="no automatic fix: the old call copies `count` bytes row by row, wrapping into the next rows of both "
               "arrays, and cudaMemcpy2DArrayToArray needs the row count. For whole rows of arrays of the same row size "
               "rowBytes (array width x element size, see cudaArrayGetInfo), both offsets 0 in x, write "
               "cudaMemcpy2DArrayToArray(dst, 0, hOffsetDst, src, 0, hOffsetSrc, rowBytes, count / rowBytes, kind); a "
               "1-row copy is right only when the copy stays inside one row of each array. The old call still compiles "
               "(deprecated, not removed)"),
    "cudart:cudaGetDriverEntryPoint": _sig(
        ["symbol", "funcPtr", "flags", "driverStatus"], app="safe",
        edits=[{"replace": "callee", "with": "cudaGetDriverEntryPointByVersion"}, {"insert_arg": "flags", "with": "CUDART_VERSION"}],
        caveat="cudaGetDriverEntryPoint used the toolkit version the code was built with, CUDART_VERSION"),
    "cudart:cudaMemcpyBatchAsync": _sig(
        ["dsts", "srcs", "sizes", "count", "attrs", "attrsIdxs", "numAttrs", "failIdx", "stream"], where={"argc": 9},
        edits=[{"delete_arg": "failIdx"}], caveat="code that reads failIdx afterwards must stop doing so"),
    "cudart:cudaMemcpy3DBatchAsync": _sig(
        ["numOps", "opList", "failIdx", "flags", "stream"], where={"argc": 5},
        edits=[{"delete_arg": "failIdx"}], caveat="code that reads failIdx afterwards must stop doing so"),
    "driver:cuMemcpyBatchAsync": _sig(
        ["dsts", "srcs", "sizes", "count", "attrs", "attrsIdxs", "numAttrs", "failIdx", "hStream"], where={"argc": 9},
        edits=[{"delete_arg": "failIdx"}], caveat="code that reads failIdx afterwards must stop doing so"),
    "driver:cuMemcpy3DBatchAsync": _sig(
        ["numOps", "opList", "failIdx", "flags", "hStream"], where={"argc": 5},
        edits=[{"delete_arg": "failIdx"}], caveat="code that reads failIdx afterwards must stop doing so"),
    "driver:cuGetProcAddress": _sig(
        ["symbol", "pfn", "cudaVersion", "flags", "symbolStatus"], where={"argc": 4}, app="safe",
        edits=[{"append_arg": "NULL"}]),
    "driver:cuCtxCreate_v2": _sig(
        ["pctx", "flags", "dev"], app="safe",
        edits=[{"replace": "callee", "with": "cuCtxCreate"}, {"insert_arg": "flags", "with": "NULL"}]),
    "driver:cuCtxCreate_v3": _sig(
        ["pctx", "paramsArray", "numParams", "flags", "dev"], where={"argc": 5},
        edits=[{"insert_before": "statement",
                "with": "CUctxCreateParams {{ fresh('ctxCreateParams') }} = {{ '{0}' if lang == 'c' else '{}' }};\n{{ fresh('ctxCreateParams') }}.execAffinityParams = {{ args.paramsArray }};\n"
                        "{{ fresh('ctxCreateParams') }}.numExecAffinityParams = {{ args.numParams }};"},
               {"replace": "node", "with": "cuCtxCreate({{ args.pctx }}, &{{ fresh('ctxCreateParams') }}, {{ args.flags }}, {{ args.dev }})"}],
        caveat="the fix declares a CUctxCreateParams variable before the statement"),
    "driver:cuStreamGetCaptureInfo_v2": _sig(
        ["hStream", "captureStatus_out", "id_out", "graph_out", "dependencies_out", "numDependencies_out"], app="safe",
        where={"argc": 6},
        edits=[{"replace": "callee", "with": "cuStreamGetCaptureInfo"}, {"insert_arg": "numDependencies_out", "with": "NULL"}]),
    "driver:cuStreamGetCaptureInfo": _sig(
        ["hStream", "captureStatus_out", "id_out", "graph_out", "dependencies_out", "numDependencies_out"], app="safe",
        where={"argc": [3, 6]},
        edits=[{"when": {"argc": 6}, "insert_arg": "numDependencies_out", "with": "NULL"},
               {"when": {"argc": 3}, "append_arg": "NULL, NULL, NULL, NULL"}]),
    "driver:cuStreamUpdateCaptureDependencies": _sig(
        ["hStream", "dependencies", "numDependencies", "flags"], where={"argc": 4}, app="safe",
        edits=[{"insert_arg": "numDependencies", "with": "NULL"}]),
    "driver:cuGraphGetEdges": _sig(
        ["hGraph", "from", "to", "numEdges"], where={"argc": 4}, app="safe", edits=[{"insert_arg": "numEdges", "with": "NULL"}]),
    "driver:cuGraphNodeGetDependencies": _sig(
        ["hNode", "dependencies", "numDependencies"], where={"argc": 3}, app="safe",
        edits=[{"insert_arg": "numDependencies", "with": "NULL"}]),
    "driver:cuGraphNodeGetDependentNodes": _sig(
        ["hNode", "dependentNodes", "numDependentNodes"], where={"argc": 3}, app="safe",
        edits=[{"insert_arg": "numDependentNodes", "with": "NULL"}]),
    "driver:cuGraphAddDependencies": _sig(
        ["hGraph", "from", "to", "numDependencies"], where={"argc": 4}, app="safe",
        edits=[{"insert_arg": "numDependencies", "with": "NULL"}]),
    "driver:cuGraphRemoveDependencies": _sig(
        ["hGraph", "from", "to", "numDependencies"], where={"argc": 4}, app="safe",
        edits=[{"insert_arg": "numDependencies", "with": "NULL"}]),
    "driver:cuGraphAddNode": _sig(
        ["phGraphNode", "hGraph", "dependencies", "numDependencies", "nodeParams"], where={"argc": 5}, app="safe",
        edits=[{"insert_arg": "numDependencies", "with": "NULL"}]),
    "driver:cuGraphInstantiate_v2": _sig(
        ["phGraphExec", "hGraph", "phErrorNode", "logBuffer", "bufferSize"], where={"argc": 5},
        edits=[{"replace": "node", "with": "cuGraphInstantiate({{ args.phGraphExec }}, {{ args.hGraph }}, 0)"}],
        caveat="the error node and log buffer are no longer filled in"),
    "driver:cuGraphExecUpdate": _sig(
        ["hGraphExec", "hGraph", "hErrorNode_out", "updateResult_out"], where={"argc": 4},
        edits=[{"insert_before": "statement", "with": "CUgraphExecUpdateResultInfo {{ fresh('updateResultInfo') }} = {{ '{0}' if lang == 'c' else '{}' }};"},
               {"replace": "args", "with": "{{ args.hGraphExec }}, {{ args.hGraph }}, &{{ fresh('updateResultInfo') }}"},
               {"insert_after": "statement",
                "with": "{% set en = args.hErrorNode_out %}{% set ur = args.updateResult_out %}"
                        "{% if en not in ['NULL', 'nullptr', '0'] %}{{ en[1:] if en.startswith('&') else '*(' ~ en ~ ')' }} = {{ fresh('updateResultInfo') }}.errorNode;\n{% endif %}"
                        "{{ ur[1:] if ur.startswith('&') else '*(' ~ ur ~ ')' }} = {{ fresh('updateResultInfo') }}.result;"}],
        caveat="the out-values are copied after the statement; move them if the statement itself reads them"),
    # C only: cuda_runtime.h:1554 keeps a non-deprecated 4-argument C++ overload ("convenience function to avoid
    # source breakage in c++ code") that NVIDIA's v13.0 samples still call (jacobi.cu): no change is needed there
    "cudart:cudaGraphExecUpdate": _sig(
        ["hGraphExec", "hGraph", "hErrorNode_out", "updateResult_out"], where={"all": [{"argc": 4}, {"lang": "c"}]},
        edits=[{"insert_before": "statement", "with": "cudaGraphExecUpdateResultInfo {{ fresh('updateResultInfo') }} = {{ '{0}' if lang == 'c' else '{}' }};"},
               {"replace": "args", "with": "{{ args.hGraphExec }}, {{ args.hGraph }}, &{{ fresh('updateResultInfo') }}"},
               {"insert_after": "statement",
                "with": "{% set en = args.hErrorNode_out %}{% set ur = args.updateResult_out %}"
                        "{% if en not in ['NULL', 'nullptr', '0'] %}{{ en[1:] if en.startswith('&') else '*(' ~ en ~ ')' }} = {{ fresh('updateResultInfo') }}.errorNode;\n{% endif %}"
                        "{{ ur[1:] if ur.startswith('&') else '*(' ~ ur ~ ')' }} = {{ fresh('updateResultInfo') }}.result;"}],
        caveat="C only (C++ keeps a 4-argument inline overload, cuda_runtime.h:1554, and is not reported). The out-values are copied after the statement"),
    "cub:cub::WARP_ALL": _sig(["predicate", "member_mask"], where={"argc": 2}, app="safe",
                              edits=[{"replace": "node", "with": "__all_sync({{ args.member_mask }}, {{ args.predicate }})"}]),
    "cub:cub::WARP_ANY": _sig(["predicate", "member_mask"], where={"argc": 2}, app="safe",
                              edits=[{"replace": "node", "with": "__any_sync({{ args.member_mask }}, {{ args.predicate }})"}]),
    "cub:cub::WARP_BALLOT": _sig(["predicate", "member_mask"], where={"argc": 2}, app="safe",
                                 edits=[{"replace": "node", "with": "__ballot_sync({{ args.member_mask }}, {{ args.predicate }})"}]),
    "cub:cub::SHFL_IDX_SYNC": _sig(
        ["word", "src_lane", "flags", "member_mask"], where={"argc": 4},
        edits=[{"replace": "node", "with": "__shfl_sync({{ args.member_mask }}, {{ args.word }}, {{ args.src_lane }})"}],
        caveat="`flags` encoded the segment width; the rewrite assumes the whole warp (width 32)"),
}

# manual rows with a condition that keeps them precise
MANUAL_WHERE: dict[str, dict] = {
    # common words: only calls in device code, and only texture<...>/surface<...> templates
    "device:ballot / any / all (bool overloads)": {"any": [{"inside": "kernel"}, {"inside": "device_function"}]},
    "device:texture<T,dim,mode> / surface<T,dim> (device texture/surface references)": {"text_matches": r"^(texture|surface)\s*<"},
    "device:cudaDeviceSynchronize (in device code)": {"any": [{"inside": "kernel"}, {"inside": "device_function"}]},
    "thrust:thrust::pair": {"file_matches": r"cuda::std::pair\b"},
    "thrust:thrust::tuple": {"file_matches": r"cuda::std::tuple\b"},
    "thrust:thrust::plus/minus/.../maximum/minimum function objects": {"file_matches": r"cuda::(std::)?(plus|minus|multiplies|divides|modulus|negate|equal_to|not_equal_to|greater|less|greater_equal|less_equal|logical_and|logical_or|logical_not|bit_and|bit_or|bit_xor|maximum|minimum)\b"},
    "cub:cub::DeviceReduce::ArgMin / ArgMax (single KeyValuePair output iterator overload)": {
        "any": [{"argc": 5}, {"all": [{"argc": 6}, {"arg": "5", "matches": r"(?i)stream|^0$|^nullptr$|^NULL$"}]}]},
    "cub:cub::CachingAllocator(..., bool debug)": {
        "file_matches": r"CachingDeviceAllocator\s*(\w+\s*)?[({][^;]*,\s*(true|false)\s*,\s*(true|false)\s*[)}]"},
}

MANUAL_ROLES: dict[str, list[str]] = {
    "device:ballot / any / all (bool overloads)": ["call"],
    "device:texture<T,dim,mode> / surface<T,dim> (device texture/surface references)": ["type"],
    "device:cudaDeviceSynchronize (in device code)": ["call"],
    "cub:cub::DeviceReduce::ArgMin / ArgMax (single KeyValuePair output iterator overload)": ["call"],
    "cub:cub::DeviceHistogram (overloads taking C arrays)": ["call"],
    "cub:cub::CachingAllocator(..., bool debug)": ["type"],
    "cudart:cudaGraphKernelNodeCopyAttributes": ["call"],
}

# rows that are rules of their own (a special matcher, condition or status)
OWN_RULE = set(MANUAL_WHERE) | set(MANUAL_ROLES) | {
    "cub:cub::Device* (overloads with trailing bool debug_synchronous)",
    "thrust:C++ dialect < C++17 for Thrust/CUB/libcu++",
    "cub:cub::Block* (trailing int LEGACY_PTX_ARCH template parameter)",
}


# ---------------------------------------------------------------------------------------------

def load_rows(rules_dir: Path = RULES) -> list[dict]:
    """The CSV's rows, then the inventory's rows for what neither they nor a hand-written rule report."""
    with CSV_PATH.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not inventory.INVENTORY.is_file():
        return rows
    releases.earlier_removals(releases.load(), rows)  # a library row's removal as the headers date it
    handwritten = inventory.rule_names(rules_dir, skip_dir=rules_dir / "catalog")
    known = set(handwritten)
    versioned: set[str] = set()
    for r in rows:
        names = api_names(r) if r["kind"] != "header" else [r["api"]]
        known.update(names)
        if r["deprecated_in"].strip() or r["removed_in"].strip():
            versioned.update(names)
    inv_rows = inventory.inventory_rows(inventory.load_inventory(), known, inventory.load_exclusions())
    # the math libraries' changes of every release pair (data/api_releases.json.gz), each with the release that
    # made it; a CSV row without a version (no migration as of 13.0: cuSPARSE's Generic API) does not hide a later
    # release's deprecation of the same name (13.2: cusparseSpGEMMreuse_*)
    rel_known = handwritten | versioned | {r["api"] for r in inv_rows}
    return rows + inv_rows + releases.catalog_rows(releases.load(), rel_known, releases.exclusions())


def handwritten_keys(rules_dir: Path) -> set[str]:
    keys: set[str] = set()
    catalog_dir = (rules_dir / "catalog").resolve()
    for path in sorted(rules_dir.rglob("CM*.yaml")):
        if catalog_dir in path.resolve().parents:
            continue
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(doc, dict):
            keys.update(str(k) for k in doc.get("catalog") or [])
    return keys


def first_source(src: str) -> str:
    return src.split(" ; ")[0].split("; ")[0].strip()


def ref_of(src: str) -> str:
    s = first_source(src)
    return re.sub(r":\d+(-\d+)?$", "", s)


# NVIDIA's documentation of each catalog library: where a user reads the API's current contract.
NVIDIA_DOCS = {
    "cudart": "CUDA Runtime API: https://docs.nvidia.com/cuda/cuda-runtime-api/index.html",
    "driver": "CUDA Driver API: https://docs.nvidia.com/cuda/cuda-driver-api/index.html",
    "device": "CUDA C++ Programming Guide: https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html",
    "cublas": "cuBLAS: https://docs.nvidia.com/cuda/cublas/index.html",
    "cufft": "cuFFT: https://docs.nvidia.com/cuda/cufft/index.html",
    "cusparse": "cuSPARSE: https://docs.nvidia.com/cuda/cusparse/index.html",
    "nvrtc": "NVRTC: https://docs.nvidia.com/cuda/nvrtc/index.html",
    "cusolver": "cuSOLVER: https://docs.nvidia.com/cuda/cusolver/index.html",
    "curand": "cuRAND: https://docs.nvidia.com/cuda/curand/index.html",
    "npp": "NPP: https://docs.nvidia.com/cuda/npp/index.html",
    "nvjpeg": "nvJPEG: https://docs.nvidia.com/cuda/nvjpeg/index.html",
    "nvjitlink": "nvJitLink: https://docs.nvidia.com/cuda/nvjitlink/index.html",
    "nvfatbin": "nvFatbin: https://docs.nvidia.com/cuda/nvfatbin/index.html",
    "thrust": "CCCL (Thrust): https://nvidia.github.io/cccl/",
    "cub": "CCCL (CUB): https://nvidia.github.io/cccl/",
    "libcudacxx": "CCCL (libcu++): https://nvidia.github.io/cccl/",
}
RELEASE_NOTES = "CUDA Toolkit release notes: https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
SHIPPED_CSV = "cudamigrate/data/cuda_api_changes.csv (ships with cudamigrate)"
SHIPPED_INVENTORY = ("cudamigrate/data/api_inventory.json (ships with cudamigrate; written from the CUDA 13.0 and "
                     "12.x headers by scripts/build_api_inventory.py)")
SHIPPED_RELEASES = ("cudamigrate/data/api_releases.json.gz (ships with cudamigrate; written from the headers of every "
                    "release with wheels by scripts/build_release_inventory.py)")
MAX_HEADER_REFS = 6


def cite(part: str) -> str | None:
    """One `source` entry of the catalog as a reference a user can follow: toolkit and wheel headers with
    their version and line, public repositories and pages as URLs. None for notes that name no place a user
    can open (a search tool's file id)."""
    part = part.strip()
    if not part or "read_file id" in part:
        return None
    m = re.match(r"cuda-13\.0 include/(\S+)( \(.*\))?$", part)
    if m:
        return f"CUDA 13.0 toolkit header include/{m.group(1)}{m.group(2) or ''}"
    m = re.match(r"absent: cuda-13\.0 include/ \((.*)\)$", part)
    if m:
        return f"not declared in the CUDA 13.0 toolkit headers (include/; {m.group(1)})"
    m = re.match(r"(nvidia-[\w-]+)==([\d.]+) nvidia/[\w]+/(\S+)( \(.*\))?$", part)
    if m:
        return f"{m.group(1)} {m.group(2)} wheel (matched to CUDA 13.0) header {m.group(3)}{m.group(4) or ''}"
    m = re.match(r"HIPIFY (docs/tables/\S+) \(ROCm/HIPIFY@(\w+), (.*)\)(:\d+(?:-\d+)?)?$", part)
    if m:
        line = f" line {m.group(4)[1:]}" if m.group(4) else ""
        return f"HIPIFY https://github.com/ROCm/HIPIFY/blob/{m.group(2)}/{m.group(1)}{line} ({m.group(3)})"
    m = re.match(r"NVIDIA/cccl (docs/\S+?)(:\d+(?:-\d+)?)?$", part)
    if m:
        return f"https://github.com/NVIDIA/cccl/blob/main/{m.group(1)}"
    m = re.match(r"absent: (nvidia-[\w-]+)==([\d.]+) headers( \(.*\))?$", part)
    if m:
        return f"not declared in the {m.group(1)} {m.group(2)} wheel's headers (matched to CUDA 13.0){m.group(3) or ''}"
    if re.match(r"(github\.com|gitlab\.com|rocm\.docs\.amd\.com|docs\.nvidia\.com)/", part):
        return "https://" + part
    return part.replace("cuda-13.0 include/", "CUDA 13.0 toolkit header include/")


def references(rows: list[dict]) -> list[str]:
    """A generated rule's references: the toolkit/wheel header lines (or their absence) of its first rows,
    the other public sources, NVIDIA's documentation for the library, and the shipped catalog rows."""
    headers: list[str] = []
    other: list[str] = []
    for r in rows:
        for part in re.split(r"\s;\s|;\s", r["source"]):
            c = cite(part)
            if c is None:
                continue
            bucket = headers if "CUDA 13.0 toolkit header" in c or c.startswith(("not declared", "nvidia-")) else other
            key = c if bucket is headers else re.sub(r" line \d+(-\d+)?", "", c)
            if key not in bucket:
                bucket.append(key)
    refs = headers[:MAX_HEADER_REFS]
    if len(headers) > MAX_HEADER_REFS:
        refs.append(f"and {len(headers) - MAX_HEADER_REFS} more header citations: the `source` column of the rows below")
    refs += other
    libs = list(dict.fromkeys(r["library"] for r in rows))
    refs += [NVIDIA_DOCS[lib] for lib in libs if lib in NVIDIA_DOCS]
    if any(r["removed_in"].strip() or r["deprecated_in"].strip() for r in rows):
        refs.append(RELEASE_NOTES)
    for shipped, part in ((SHIPPED_CSV, [r for r in rows if r.get("origin") not in ("inventory", "releases")]),
                          (SHIPPED_INVENTORY, [r for r in rows if r.get("origin") == "inventory"]),
                          (SHIPPED_RELEASES, [r for r in rows if r.get("origin") == "releases"])):
        names = [f"{r['library']}:{r['api']}" for r in part]
        if names:
            refs.append(f"{shipped}, {'rows' if shipped is SHIPPED_CSV else 'entries'} " + ", ".join(names[:8])
                        + (f" and {len(names) - 8} more" if len(names) > 8 else ""))
    return refs


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def short_notes(notes: str) -> str:
    parts = [p.strip() for p in notes.split(";") if p.strip()]
    keep = [p for p in parts if not p.startswith(("HIPIFY section", "A=", "HIPIFY data"))]
    return "; ".join(keep)[:300]


def version_status(row: dict) -> str:
    """Wording used when the row has no usable version (the message's `version` is then empty)."""
    m = re.search(r"C=(\d+\.\d+)", row["notes"])
    if m:
        return f"changed in CUDA {m.group(1)} (HIPIFY marks it C={m.group(1)})"
    raw = " / ".join(x for x in (row["deprecated_in"], row["removed_in"]) if x.strip())
    if raw:
        return f"deprecated ({raw})"
    return "listed in the CUDA API change catalog (no version recorded)"


def raw_version_note(row: dict, dep: str | None, rem: str | None) -> str:
    if not (dep or rem):
        return ""  # version_status() already quotes the catalog's wording
    bits = []
    for raw, norm, word in ((row["deprecated_in"], dep, "deprecated"), (row["removed_in"], rem, "removed")):
        raw = raw.strip()
        if raw and raw != norm:
            bits.append(f"{word} in {raw}")
    return ("; catalog: " + ", ".join(bits)) if bits else ""


def advice_for(row: dict, kind: str, replacement: str | None, caveat: str | None) -> str:
    repl = row["replacement"].strip()
    if kind == "rename":
        text = f"Replace it with `{replacement}`."
    elif kind == "include":
        text = f"Fix: {repl}."
    elif kind == "signature":
        text = f"New form: {repl}." if repl else "The parameter list changed."
    else:
        if repl and not repl.startswith("(none"):
            text = f"Replacement: {repl}."
        elif repl:
            rest = repl[len("(none"):].strip(" );,:")  # "(none: why)" -> "why"
            text = "No direct replacement" + (f" ({rest})" if rest else "") + "; remove or rewrite the use."
        else:
            sn = short_notes(row["notes"])
            text = f"No replacement is recorded; {sn}." if sn else "No replacement is recorded; rewrite the use."
            if row["library"] == "cusparse" and "Generic API" not in row["notes"]:  # not for the Generic API itself
                text += (" The successor of the legacy cuSPARSE routines is the Generic API (cusparseSpMV, cusparseSpMM, "
                         "cusparseSpSV, cusparseSpSM, cusparseSpGEMM, cusparseSparseToDense/DenseToSparse).")
    if caveat:
        text += f" Note: {caveat}."
    return text


class Group:
    def __init__(self, key: str, library: str, fix_kind: str, dep: str | None, rem: str | None):
        self.key, self.library, self.fix_kind, self.dep, self.rem = key, library, fix_kind, dep, rem
        self.rows: list[dict] = []
        self.names: "OrderedDict[str, dict]" = OrderedDict()
        self.roles: list[str] = []
        self.applicability = "manual"
        self.match: dict | None = None
        self.where: dict | None = None
        self.edits: list | None = None
        self.status = "stable"
        self.single: str | None = None


def build_groups(rows: list[dict], skip: set[str], explicit: bool = True) -> tuple[dict[str, Group], list[tuple[str, str]]]:
    groups: dict[str, Group] = {}
    skipped: list[tuple[str, str]] = []
    for row in rows:
        key = f"{row['library']}:{row['api']}"
        if key in skip:
            skipped.append((key, "hand-written rule lists it in `catalog:`"))
            continue
        why_not = not_a_migration(row)
        if why_not:
            skipped.append((key, why_not))
            continue
        if explicit and (explicitly_excluded(row["library"], row["api"]) or cusparse_legacy(row)):
            skipped.append((key, "explicit exclusion (hand-written migration)"))
            continue
        lib, fk = row["library"], row["fix_kind"]
        dep, rem = norm_version(row["deprecated_in"]), norm_version(row["removed_in"])
        caveat = None
        repl_text = None
        app = "manual"
        edits = None
        where = None
        params: list[str] | None = None
        match = None
        status = "stable"
        names = api_names(row) if row["kind"] != "header" else [row["api"]]
        roles = MANUAL_ROLES.get(key) or roles_for(row)
        own = key in OWN_RULE
        if fk == "rename":
            if key in TEXT_FIX or re.match(r"thrust:thrust::iterator_(value|reference|difference)\[_t\]", key):
                m = re.match(r"thrust:thrust::iterator_(value|reference|difference)\[_t\]", key)
                spec = iter_alias_fix(m.group(1)) if m else TEXT_FIX[key]
                app, edits, caveat = spec["applicability"], spec["edits"], spec.get("caveat")
                repl_text = row["replacement"].strip()
                own = True
            else:
                repl_text, app, caveat = RENAME_FIX.get(key) or rename_target(row)
                if repl_text is None:
                    app = "manual"  # no single name to write: report with the catalog's guidance
        elif fk == "signature":
            spec = SIGNATURE.get(key)
            if spec is not None:
                app, edits, where, caveat, params = spec["applicability"], spec["edits"], spec["where"], spec["caveat"], spec["params"]
                match = {"call": {"names": {n: list(params) for n in names}}}
                own = True
            elif key == "cub:cub::Device* (overloads with trailing bool debug_synchronous)":
                app = "safe"
                roles = ["call"]
                where = {"all": [{"argc_min": 6}, {"arg": "-1", "matches": r"^(true|false|\w*[dD]ebug\w*)$"}]}
                edits = [{"delete_arg": "-1"}]
                caveat = "the debug_synchronous flag only added a synchronize and a printf; use CUB_DEBUG_SYNC if needed"
            elif key == "cub:cub::Block* (trailing int LEGACY_PTX_ARCH template parameter)":
                app = "safe"
                roles = ["type"]
                where = {"any": [{"all": [{"name": n}, {"text_matches": r"^[^<]*<(?:[^<>,]*,){%d}[^<>,]*>$" % (k - 1)}]}
                                 for n, k in LEGACY_PTX_ARCH_ARITY.items()]}
                edits = [{"replace": "node", "with": "{{ text[:text.rindex(',')] | trim }}>"}]
                caveat = "the last template argument (LEGACY_PTX_ARCH) is dropped; it had no effect"
            else:
                roles = ["call"] if row["kind"] in ("function", "signature_change", "intrinsic") else roles
        elif fk == "include":
            if key == "cublas:cublas.h":
                match = {"include": {"paths": ["cublas.h"]}}
                app = "unsafe"
                edits = [{"replace": "name", "with": "{% if vars.system %}<cublas_v2.h>{% else %}\"cublas_v2.h\"{% endif %}"}]
                caveat = "legacy calls without a handle (cublasSgemm(...), cublasInit, cublasAlloc) must be rewritten to the v2 API"
            elif key.startswith("cublas:cublasCreate"):
                match = {"include": {"paths": ["cublas_api.h"]}}
                where = {"all": [{"file_lacks_include": r"(^|/)cublas_v2\.h$"},
                                 # a call `cublasX(`, X not starting `Lt` and not ending `_v2`, written for RE2
                                 # (no lookaround): `\bcublas(?!Lt)\w+(?<!_v2)\s*\(`, same language
                                 {"file_matches": r"\bcublas(?:L|(?:[^\WL]|L[^\Wt])(?:\w*(?:[^\W2]|[^\Wv]2|[^\W_]v2)|2)?"
                                                  r"|(?:[^\WL_]|L[^\Wt_])v2)\s*\("}]}
                app = "safe"
                edits = [{"replace": "name", "with": "{% if vars.system %}<cublas_v2.h>{% else %}\"cublas_v2.h\"{% endif %}"}]
            elif key.startswith("thrust:<thrust/...>"):
                match = {"include": {"prefixes": ["cccl/thrust/", "cccl/cub/", "cccl/cuda/"]}}
                app = "safe"
                edits = [{"replace": "name", "with": "{{ written | replace('cccl/', '', 1) }}"}]
            else:
                raise SystemExit(f"no include fix for {key}")
            own = True
        elif fk == "manual" and key == "thrust:C++ dialect < C++17 for Thrust/CUB/libcu++":
            match = {"include": {"prefixes": ["thrust/", "cub/", "cuda/"]}}
            status = "opt-in"
        where = MANUAL_WHERE.get(key, where)
        if row.get("where"):  # an inventory prototype change: only calls with the 12.x argument count
            where, roles, own = row["where"], ["call"], True
        if match is None and row["kind"] == "struct_field":
            typ, fld = row["api"].split("::")
            names = [fld]
            match = {"member": {"fields": [fld], "receiver_types": [typ]}}
        if match is None:
            match = {"identifier": {"names": list(names), "roles": list(roles)}}
        shape = next(iter(match))
        if own:
            gkey = f"{lib}|{fk}|api={row['api']}"
        else:
            gkey = f"{lib}|{fk}|dep={dep or '-'}|rem={rem or '-'}|{shape}:{KIND_CLASS.get(row['kind'], row['kind'])}|{app}"
        g = groups.get(gkey)
        if g is None:
            g = groups[gkey] = Group(gkey, lib, fk, dep, rem)
            g.applicability, g.match, g.where, g.edits, g.status = app, match, where, edits, status
            g.roles = roles
            g.single = row["api"] if own else None
        elif g.match.get("identifier") is not None:
            for n in names:
                if n not in g.match["identifier"]["names"]:
                    g.match["identifier"]["names"].append(n)
        g.rows.append(row)
        info = {
            "api": row["api"],
            "replacement": repl_text if repl_text is not None else (row["replacement"].strip() or None),
            "advice": advice_for(row, fk, repl_text, caveat),
            "source": first_source(row["source"]),
            "status": version_status(row) if not (dep or rem) else None,
            "catalog": raw_version_note(row, dep, rem),
        }
        for n in names:
            per = dict(info)
            if fk == "rename" and not edits:
                r = re.sub(r"<[^<>]*>", "", repl_text) if "<>" not in repl_text else repl_text
                if "[_t]" in r:
                    r = r.replace("[_t]", "_t" if n.endswith("_t") else "")
                per["rename"] = r
                per["replacement"] = None
                per["advice"] = advice_for(row, fk, r, caveat)
            if per["api"] == n:
                per["api"] = None
            g.names[n] = per
    return groups, skipped


def assign_ids(groups: dict[str, Group], ids_path: Path) -> dict[str, str]:
    ids: dict[str, str] = {}
    if ids_path.is_file():
        ids = {str(k): str(v) for k, v in (yaml.safe_load(ids_path.read_text(encoding="utf-8")) or {}).items()}
    used = {int(v[2:]) for v in ids.values()}
    nxt = ID_MIN
    for key in sorted(groups):
        if key in ids:
            continue
        while nxt in used:
            nxt += 1
        if nxt > ID_MAX:
            raise SystemExit("out of catalog rule ids (CM1000-CM1999)")
        ids[key] = f"CM{nxt}"
        used.add(nxt)
    return ids


KIND_WORDS = {"rename": "renamed", "include": "header change", "signature": "parameter-list change", "manual": "manual migration"}


def group_title(g: Group) -> tuple[str, str]:
    lt = LIBRARY_TITLES.get(g.library, g.library)
    if g.rem and g.dep:
        when = f"deprecated in {g.dep}, removed in {g.rem}"
        tag = f"removed-{g.rem}"
    elif g.rem:
        when = f"removed in {g.rem}"
        tag = f"removed-{g.rem}"
    elif g.dep:
        when = f"deprecated in {g.dep}"
        tag = f"deprecated-{g.dep}"
    else:
        when = "changed (no version recorded)"
        tag = "changed"
    if g.single:
        return (f"{lt} `{g.single}`: {when} ({KIND_WORDS[g.fix_kind]})",
                slug(f"{g.library}-{g.names and next(iter(g.names)).split('::')[-1] or g.single}-{g.fix_kind}"))
    n = len(g.rows)
    what = {"rename": "renamed APIs", "include": "headers", "signature": "APIs whose parameters changed", "manual": "APIs"}[g.fix_kind]
    roles = g.match.get("identifier", {}).get("roles", [])
    shape = KIND_CLASS.get(g.rows[0]["kind"], "constants")
    return (f"{lt} {what} ({shape}) {when}: {n} catalog entr{'y' if n == 1 else 'ies'}",
            slug(f"{g.library}-{g.fix_kind}-{shape}-{tag}" + ("" if g.applicability in ("manual", "safe") else f"-{g.applicability}")))


MESSAGE = (
    "{{ data.library }} `{{ written }}`{% if data.apis[KEY].get('api') %} (catalog entry `{{ data.apis[KEY].api }}`){% endif %} is "
    "{% if version %}{{ version }}{% else %}{{ data.apis[KEY].get('status', 'changed') }}{% endif %}"
    "{{ data.apis[KEY].get('catalog', '') }}. "
    "{{ data.apis[KEY].advice }} (catalog source: {{ data.apis[KEY].source }})"
)


# Rows the catalog lists as removed whose old spelling nvcc 13.0 still compiles (tests/test_build_break_proof.py
# compiles what each rule flags): reported as deprecated, not as build breaks. key -> why it still compiles.
STILL_COMPILES: dict[str, str] = {
    "thrust:thrust::pair": "thrust::pair is now an alias of cuda::std::pair: uses compile; only overloads or "
                           "specializations on both types collide",
    "thrust:thrust::tuple": "thrust::tuple is now an alias of cuda::std::tuple: uses compile; only overloads or "
                            "specializations on both types collide",
    "thrust:thrust::plus/minus/.../maximum/minimum function objects":
        "the thrust function objects are now aliases of the cuda::std ones: uses compile; only overloads or "
        "specializations on both types collide",
    "thrust:<thrust/...>, <cub/...>, <cuda/...> include location":
        "nvcc 13.0 finds <cccl/thrust/...> under its include directory and adds -isystem include/cccl itself, so the "
        "include compiles with nvcc; a host compiler needs -I${CUDA}/include/cccl",
}


# Rows without a removal version whose flagged form nvcc 13.0 rejects: a build break, not hygiene.
# key -> (the contexts where it breaks, as a rule condition; the 13.0 declaration that proves it).
# tests/test_nvcc.py compiles the fixtures' before files and requires an error on each such finding's line.
VERSIONLESS_BREAKS: dict[str, tuple[dict, str]] = {
    # the rule's `where` matches C only: C++ keeps a 4-argument overload
    "cudart:cudaGraphExecUpdate": (
        {"lang": "c"},
        "In C the CUDA 13.0 prototype is the only one: cudaGraphExecUpdate(cudaGraphExec_t, cudaGraph_t, "
        "cudaGraphExecUpdateResultInfo *) (cuda_runtime_api.h:12604), so the 4-argument call fails with 'too many "
        "arguments to function'; the 4-argument overload (cuda_runtime.h:1555) exists only for C++."),
    # the wrappers call __ballot/__any/__all, whose non-.sync `vote` ptxas rejects for sm_70+ (13.0 targets sm_75+)
    "device:ballot / any / all (bool overloads)": (
        {},
        "The wrappers (sm_20_intrinsics.hpp:77, device_atomic_functions.hpp:239) call the deprecated __ballot/__any/"
        "__all, which compile to `vote` without `.sync`: ptxas rejects it for sm_70 and later ('Instruction 'vote' "
        "without '.sync' is not supported on .target sm_70 and higher'), and nvcc 13.0 targets sm_75 and later only."),
    "driver:cuGraphExecUpdate": (
        {},
        "CUDA 13.0 cuda.h:158 maps cuGraphExecUpdate to cuGraphExecUpdate_v2(CUgraphExec, CUgraph, "
        "CUgraphExecUpdateResultInfo *) and declares no 4-argument form: the old call fails in C ('too many arguments "
        "to function cuGraphExecUpdate_v2') and in C++ (cannot convert CUgraphNode* to CUgraphExecUpdateResultInfo*)."),
}


def render_rule(g: Group, rid: str) -> tuple[str, str]:
    title, name_slug = group_title(g)
    lt = LIBRARY_TITLES.get(g.library, g.library)
    origin = ("cudamigrate/data/api_inventory.json" if all(r.get("origin") == "inventory" for r in g.rows)
              else "cudamigrate/data/api_releases.json.gz" if all(r.get("origin") == "releases" for r in g.rows)
              else "cudamigrate/data/cuda_api_changes.csv")
    severity = "error" if g.rem else ("warning" if g.dep else "info")
    impact = "build-break" if g.rem else ("deprecated" if g.dep else "hygiene")
    doc: "OrderedDict[str, object]" = OrderedDict()
    doc["id"] = rid
    doc["name"] = f"catalog-{name_slug}"
    doc["family"] = "catalog"
    doc["summary"] = title
    # include rules match a path, not the API's name: their single entry is looked up by data.key
    key_expr = "name" if "include" not in g.match else "data.key"
    doc["message"] = MESSAGE.replace("KEY", key_expr)
    doc["severity"] = severity
    if g.status != "stable":
        doc["status"] = g.status
    doc["library"] = g.library
    if g.dep:
        doc["deprecated_in"] = g.dep
    if g.rem:
        doc["removed_in"] = g.rem
    doc["match"] = g.match
    if g.where:
        doc["where"] = g.where
    fix: "OrderedDict[str, object]" = OrderedDict()
    fix["applicability"] = g.applicability
    if g.applicability != "manual":
        if g.edits:
            fix["title"] = "Rewrite `{{ written }}` for " + f"{'the new API' if g.fix_kind != 'rename' else '{{ data.apis[name].replacement }}'}"
            fix["edits"] = g.edits
        else:
            fix["title"] = "Replace `{{ written }}` with `{{ data.apis[name].rename }}`"
            fix["edits"] = [{"replace": "name", "with": "{{ data.apis[name].rename }}"}]
    doc["fix"] = fix
    doc["cost"] = {"impact": impact}
    still = [STILL_COMPILES[f"{r['library']}:{r['api']}"] for r in g.rows if f"{r['library']}:{r['api']}" in STILL_COMPILES]
    if g.rem and still and len(still) == len(g.rows):
        # removed in the catalog's words, but the old spelling still compiles: a deprecation in every context
        doc["severity"] = "warning"
        doc["cost"] = {"impact": impact, "impact_when": [{"when": {}, "impact": "deprecated"}]}
    breaks = [VERSIONLESS_BREAKS[f"{r['library']}:{r['api']}"] for r in g.rows
              if f"{r['library']}:{r['api']}" in VERSIONLESS_BREAKS]
    if not g.rem and breaks and len(breaks) == len(g.rows):
        doc["severity"] = "error"
        doc["cost"] = {"impact": impact, "impact_when": [{"when": breaks[0][0], "impact": "build-break"}]}
    apis = OrderedDict()
    for n, info in g.names.items():
        apis[n] = {k: v for k, v in info.items() if v not in (None, "")}
    doc["data"] = {"library": lt, "apis": apis}
    if "include" in g.match:
        doc["data"]["key"] = next(iter(apis))
    rows = g.rows
    what = (f"Uses of {len(rows)} {lt} API(s) that the CUDA API change catalog lists as "
            f"{KIND_WORDS[g.fix_kind]}s: " + ", ".join(f"`{r['api']}`" for r in rows[:12]) + (", ..." if len(rows) > 12 else "") + ".")
    if g.match.get("identifier"):
        what += (" Matched by exact (qualified) name in " + ", ".join(g.match["identifier"]["roles"]) +
                 " position; declarations of user variables or functions with the same name, comments and strings are not matched.")
    why = []
    if g.rem:
        why.append(f"Removed in CUDA {g.rem}: code that uses them no longer compiles (or links) with that toolkit.")
    if g.dep and not g.rem:
        why.append(f"Deprecated since CUDA {g.dep}: still declared, but compilers warn and a later release may remove them.")
    if not g.dep and not g.rem:
        why.append("The catalog records a behaviour or parameter change without a version; see each finding's notes.")
    if g.fix_kind == "rename":
        fs = ("Safe: the replacement takes the same arguments and is declared by the same headers (checked against the "
              "CUDA 13.0 headers)." if g.applicability == "safe" else
              "Unsafe: the replacement differs in a way the finding's note names (members, template arguments or "
              "argument order); review the result.")
    elif g.applicability == "manual":
        fs = "Manual: there is no mechanical replacement; the message gives the catalog's guidance."
    else:
        fs = ("Safe: the rewrite is mechanical and keeps behaviour." if g.applicability == "safe" else
              "Unsafe: the rewrite compiles but the note in the message says what to review.")
    doc["docs"] = {
        "what": what,
        "why": " ".join(why) + f" Generated from {origin} by scripts/gen_catalog_rules.py; "
               "one rule covers the catalog rows that share library, fix kind and versions, and each finding names its own API.",
        "fix_safety": fs,
    }
    if g.rem and still and len(still) == len(g.rows):
        doc["docs"]["why"] = (f"The catalog lists it as removed in CUDA {g.rem}, but it is not a build break: "
                              + "; ".join(dict.fromkeys(still)) + ". Generated from cudamigrate/data/cuda_api_changes.csv "
                              "by scripts/gen_catalog_rules.py.")
    if not g.rem and breaks and len(breaks) == len(g.rows):
        doc["docs"]["why"] = (" ".join(dict.fromkeys(why for _, why in breaks)) + " Generated from cudamigrate/data/cuda_api_changes.csv "
                              "by scripts/gen_catalog_rules.py.")
    ex_name = next(iter(g.names))
    ex = g.names[ex_name]
    if ex.get("rename") and "*" not in ex_name:
        doc["docs"]["example"] = f"{ex_name}  ->  {ex['rename']}"
    doc["references"] = references(rows)
    doc["tags"] = ["catalog", "generated", g.fix_kind]
    doc["catalog"] = [f"{r['library']}:{r['api']}" for r in rows]
    header = (f"# GENERATED by scripts/gen_catalog_rules.py from {origin} -- do not edit;\n"
              "# change the generator (or add a hand-written rule with `catalog:` keys) and re-run it.\n")
    text = header + yaml.dump(_plain(doc), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
    return f"{rid}-{name_slug}.yaml", text


class _Dumper(yaml.SafeDumper):
    pass


def _str_repr(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_repr)


def _plain(o):
    if isinstance(o, dict):
        return {k: _plain(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_plain(v) for v in o]
    return o


def generate(out: Path, rules_dir: Path = RULES, ids_path: Path | None = None, explicit: bool | None = None) -> dict:
    rows = load_rows()
    skip = handwritten_keys(rules_dir)
    groups, skipped = build_groups(rows, skip, USE_EXPLICIT_EXCLUSIONS if explicit is None else explicit)
    ids_path = ids_path or (OUT / IDS_NAME)
    ids = assign_ids(groups, ids_path)
    if out.exists():
        for p in out.rglob("CM*.yaml"):
            p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for key, g in sorted(groups.items(), key=lambda kv: ids[kv[0]]):
        fname, text = render_rule(g, ids[key])
        d = out / g.library
        d.mkdir(parents=True, exist_ok=True)
        (d / fname).write_text(text, encoding="utf-8")
        written += 1
    ids_text = ("# Stable ids of generated catalog rules (group key -> id). Maintained by scripts/gen_catalog_rules.py:\n"
                "# keep entries even when a group disappears, so that ids are never reused.\n")
    ids_text += yaml.safe_dump(dict(sorted(ids.items(), key=lambda kv: kv[1])), sort_keys=False, width=200)
    (out / IDS_NAME).write_text(ids_text, encoding="utf-8")
    skipped_text = "# Catalog rows not generated here, and why (written by scripts/gen_catalog_rules.py)\n"
    skipped_text += yaml.safe_dump([{"key": k, "why": w} for k, w in skipped], sort_keys=False, width=200)
    (out / "skipped.yaml").write_text(skipped_text, encoding="utf-8")
    (out / "README.md").write_text(README, encoding="utf-8")
    for d in sorted(out.iterdir()):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return {"rules": written, "rows": sum(len(g.rows) for g in groups.values()), "skipped": len(skipped)}


README = """# Generated catalog rules (CM1000-CM1999)

Everything in this directory is written by `scripts/gen_catalog_rules.py` from
`cudamigrate/data/cuda_api_changes.csv` and from the header inventory `cudamigrate/data/api_inventory.json`
(written by `scripts/build_api_inventory.py` from the CUDA 13.0 and last 12.x headers: the entries that no CSV
row or hand-written rule reports, less the reviewed exclusions in `cudamigrate/data/api_inventory_exclusions.yaml`);
do not edit it by hand.

* `python scripts/gen_catalog_rules.py` regenerates it (run it after changing the catalog, the generator,
  or the `catalog:` keys of a hand-written rule); `--check` reports differences; tests/test_catalog.py fails
  when the files are stale.
* `ids.yaml` keeps rule ids stable across regenerations; `skipped.yaml` lists the catalog rows left to
  hand-written rules and why, and the rows that are not migrations at all (neither deprecated nor removed,
  and the change compiles unchanged: the cuSPARSE Generic API's const descriptors), which get no finding.
* A hand-written rule takes rows over by listing their `library:api` keys under `catalog:`; the generator
  then leaves them out. The generator's docstring explains the grouping.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with rules/catalog/ instead of writing it")
    ap.add_argument("--no-explicit-exclusions", action="store_true",
                    help="leave out only rows that hand-written rules list under `catalog:`")
    args = ap.parse_args(argv)
    explicit = False if args.no_explicit_exclusions else None
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp) / "catalog"
            generate(t, ids_path=OUT / IDS_NAME, explicit=explicit)
            diffs = compare_dirs(t, OUT)
        for d in diffs:
            print(d)
        return 1 if diffs else 0
    stats = generate(args.out, ids_path=OUT / IDS_NAME if args.out != OUT else None, explicit=explicit)
    print(f"wrote {stats['rules']} rules covering {stats['rows']} catalog rows to {args.out} ({stats['skipped']} rows skipped)")
    return 0


def compare_dirs(a: Path, b: Path) -> list[str]:
    out = []
    fa = {p.relative_to(a): p for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b): p for p in b.rglob("*") if p.is_file()} if b.is_dir() else {}
    for rel in sorted(set(fa) | set(fb)):
        if rel not in fb:
            out.append(f"missing in {b}: {rel}")
        elif rel not in fa:
            out.append(f"not generated: {b / rel}")
        elif fa[rel].read_text(encoding="utf-8") != fb[rel].read_text(encoding="utf-8"):
            diff = difflib.unified_diff(fb[rel].read_text().splitlines(), fa[rel].read_text().splitlines(), str(b / rel), "generated", lineterm="", n=1)
            out.append("\n".join(list(diff)[:20]))
    return out


if __name__ == "__main__":
    sys.exit(main())
