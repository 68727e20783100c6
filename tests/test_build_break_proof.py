"""Every rule classed `build-break` for CUDA 13.0 is proven by nvcc 13.0 (issue 11, item 3).

A build-break finding claims that the file no longer compiles. The claim is checked by the compiler:

- rules about names that are gone (catalog rows, `cudaThreadSynchronize`, `cub::Sum`, ...): every concrete name
  gets a probe `(void)(NAME);` in a function of its own, all probes in one translation unit compiled once with a
  raised error limit; each probe's line must carry nvcc's "is undefined" / "has no member" error for a component of
  the name. A name that is still declared gets another error (or none) and fails the test;
- device-only names (warp intrinsics, legacy device wrappers) get the same probes in kernels, in a second
  translation unit (nvcc stops at the host pass's errors, which would hide them), and the non-`.sync` vote
  intrinsics, which only ptxas rejects, one kernel each in a third, counted by ptxas' errors;
- rules about a signature or a use that the names alone cannot show (4-argument `cudaMemPrefetchAsync`,
  texture references, removed `cudaDeviceProp` fields, ...) are proven by their fixtures: `tests/test_nvcc.py`
  compiles each `before` file and requires a compiler error on the lines of every build-break finding. This
  module checks that every such rule has that fixture;
- NVRTC architecture options (CM404) are checked against `nvcc --list-gpu-arch`.

The compiles run in parallel; on 2 cores the module takes about a minute (most of it the CCCL headers).
"""

from __future__ import annotations

import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudamigrate.toolcheck.build import nvcc_command, nvcc_path
from cudamigrate.findings.cost import base_impact
from cudamigrate.toolcheck.fixtures import expected_findings, load_cases

from .conftest import FIXTURES
from .helpers import all_rules

TARGET = (13, 0)
NAME = re.compile(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*")

# build-break by version, unless `cost.impact_when` downgrades it in every context (`when: {}`)
BB_RULES = [r for r in all_rules() if base_impact(r.cost.get("impact"), r.deprecated_in, r.removed_in, TARGET) == "build-break"
            and not any(iw.get("when") == {} for iw in r.cost.get("impact_when", []) or [])]

# Names the host pass still declares and only the device pass rejects: probed as calls in kernels, alone.
DEVICE_ONLY = {"__shfl", "__shfl_up", "__shfl_down", "__shfl_xor"}
# Non-.sync vote intrinsics: the front end only warns, ptxas rejects them for sm_70+.
PTXAS_ONLY = {"__ballot", "__any", "__all"}
# Rules whose names still exist: the break is a signature, a template arity, an overload or a use in device code.
# Each must have a fixture that nvcc 13.0 rejects on the finding's lines (see test_nvcc.py).
BY_FIXTURE = {"CM1024", "CM1090", "CM1091", "CM503", "CM504", "CM506", "CM507", "CM508", "CM509", "CM518",
              "CM520", "CM524", "CM601", "CM602", "CM603",
              # build breaks without a removal version (their impact_when says where): the 4-argument graph update
              "CM1050", "CM1094",
              # an `int` out-argument where NPP declares `size_t *`; a 3-argument call of a query that takes 4
              "CM542", "CM543"}
# Signature changes proven here: the old form (must be rejected on its line) and the new form (must compile).
TYPED = {
    "CM1025": ("void t_{i}() {{ auto al = cub::CachingDeviceAllocator(8, 3, 7, 1 << 20, true, false); (void)al; }}",
               "void c_{i}() {{ auto al = cub::CachingDeviceAllocator(8, 3, 7, 1 << 20, true); (void)al; }}"),
    "CM1051": ("void t_{i}(cudaMemcpy3DBatchOp *o, size_t *f, cudaStream_t s) {{ cudaMemcpy3DBatchAsync(2, o, f, 0, s); }}",
               "void c_{i}(cudaMemcpy3DBatchOp *o, cudaStream_t s) {{ cudaMemcpy3DBatchAsync(2, o, 0, s); }}"),
    "CM1053": ("void t_{i}(void **d, void **r, size_t *z, cudaMemcpyAttributes *a, size_t *x, size_t *f, cudaStream_t s) "
               "{{ cudaMemcpyBatchAsync(d, r, z, 2, a, x, 1, f, s); }}",
               "void c_{i}(void **d, void **r, size_t *z, cudaMemcpyAttributes *a, size_t *x, cudaStream_t s) "
               "{{ cudaMemcpyBatchAsync(d, r, z, 2, a, x, 1, s); }}"),
    "CM1100": ("void t_{i}(CUDA_MEMCPY3D_BATCH_OP *o, size_t *f, CUstream s) {{ cuMemcpy3DBatchAsync(2, o, f, 0, s); }}",
               "void c_{i}(CUDA_MEMCPY3D_BATCH_OP *o, CUstream s) {{ cuMemcpy3DBatchAsync(2, o, 0, s); }}"),
    "CM1101": ("void t_{i}(CUdeviceptr *d, CUdeviceptr *r, size_t *z, CUmemcpyAttributes *a, size_t *x, size_t *f, CUstream s) "
               "{{ cuMemcpyBatchAsync(d, r, z, 2, a, x, 1, f, s); }}",
               "void c_{i}(CUdeviceptr *d, CUdeviceptr *r, size_t *z, CUmemcpyAttributes *a, size_t *x, CUstream s) "
               "{{ cuMemcpyBatchAsync(d, r, z, 2, a, x, 1, s); }}"),
}
# Device-side cudaDeviceSynchronize (CDP1): declared for host code, rejected in device code; proven by its own
# translation unit below.
CDP1_DEVICE = {"CM1067", "CM532"}
# Breaks that no compiler sees: the call compiles and fails at run time. Their rules say `impact: runtime-break`
# (so they are not in BB_RULES); proven on the GPU by their fixtures, not here.
RUNTIME_ONLY = {"CM531": "cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, n) returns cudaErrorUnsupportedLimit on cc 9.0+"}
# Probe text for names that are members of class templates.
PROBE_TEXT = {"cub::BinaryOpHasIdxParam::HAS_PARAM": "cub::BinaryOpHasIdxParam<int, int>::HAS_PARAM"}
# Names that are patterns or members of class templates, not probe-able as `(void)(NAME)`; their rule is proven
# by its other names.
NOT_A_NAME = re.compile(r"\*|^cub::BaseTraits::")

HOST_INCLUDES = """\
#include <cuda_runtime.h>
#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_profiler_api.h>
#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/pair.h>
#include <thrust/tuple.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/system/cuda/execution_policy.h>
#include <cuda/std/functional>
#include <cublasLt.h>
#include <cufft.h>
#include <cufftXt.h>
#include <cusparse.h>
#include <nvrtc.h>
#include <npp.h>
#include <cusolverDn.h>
#include <nvjpeg.h>
#if __has_include(<EGL/egl.h>)
#include <cuda_egl_interop.h>
#endif
"""

# A probe proves nothing if its library's header is missing: the libraries HOST_INCLUDES covers, and one name of
# each that must compile there.
LIBRARIES = {"cudart", "driver", "cub", "thrust", "cufft", "cublas", "libcudacxx", "nvrtc", "device", "cusparse", "npp",
             "cusolver", "nvjpeg"}
CONTROLS = ["cudaMalloc((void **)0, 0)", "cuInit(0)", "sizeof(cub::DeviceReduce)", "thrust::device_vector<int>()",
            "cufftPlan1d", "cublasLtCreate", "cuda::std::plus<int>()", "nvrtcCreateProgram", "cusparseCreate",
            "nppGetLibVersion()", "__saturatef", "cusolverDnXpotrf", "nvjpegCreateSimple"]

UNDEFINED = re.compile(r'identifier "([^"]+)" is undefined|(?:namespace|class) "[^"]*" has no member "([^"]+)"'
                       r'|name followed by "::" must be a class or namespace name|"([^"]+)" is not a template')


def _probe_names() -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]:
    host, device, ptxas = [], [], []
    for r in BB_RULES:
        if r.id in BY_FIXTURE or r.id in TYPED or r.id in CDP1_DEVICE or r.id in RUNTIME_ONLY or r.kind not in ("identifier", "call"):
            continue
        for name in r.spec["names"]:
            if NOT_A_NAME.search(name) or not NAME.fullmatch(name):
                continue
            if name in PTXAS_ONLY:
                ptxas.append((r.id, name))
            elif name in DEVICE_ONLY:
                device.append((r.id, name))
            else:
                host.append((r.id, name))
    return host, device, ptxas


def _errors_by_line(output: str, src: Path) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for m in re.finditer(r"^(?:.*[/\\])?" + re.escape(src.name) + r"\((\d+)\): error: (.*)$", output, re.M):
        out.setdefault(int(m.group(1)), []).append(m.group(2))
    return out


def _compile(src: Path, flags: list[str]) -> str:
    cmd = nvcc_command(src, src.with_suffix(".o"), link=False, flags=flags)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return p.stdout + p.stderr


def _unproven(probes: list[tuple[str, str]], lines: dict[tuple[str, str], int], errors: dict[int, list[str]]) -> list[str]:
    bad = []
    for rid, name in probes:
        parts = set(name.split("::"))
        msgs = errors.get(lines[(rid, name)], [])
        ok = False
        for msg in msgs:
            m = UNDEFINED.search(msg)
            if m and (m.group(0).startswith("name followed") or {g for g in m.groups() if g} & parts):
                ok = True
        if not ok:
            bad.append(f"{rid} {name}: {msgs or 'compiles'}")
    return bad


@pytest.mark.nvcc
def test_removed_names_are_rejected_by_nvcc(tmp_path):
    host, device, ptxas = _probe_names()
    assert len(host) > 400 and device and ptxas
    lines: dict[tuple[str, str], int] = {}
    text = [HOST_INCLUDES]
    for i, (rid, name) in enumerate(host):
        text.append(f"void probe_{i}() {{ (void)({PROBE_TEXT.get(name, name)}); }}  // {rid}\n")
        lines[(rid, name)] = HOST_INCLUDES.count("\n") + i + 1
    libs = {r.library for r in BB_RULES if r.id in {rid for rid, _ in host}}
    assert libs <= LIBRARIES, f"probes of {libs - LIBRARIES} need their header in HOST_INCLUDES and a CONTROLS entry"
    typed_lines: dict[str, tuple[int, int]] = {}
    for i, (rid, (old, new)) in enumerate(sorted(TYPED.items())):
        n = HOST_INCLUDES.count("\n") + len(host) + 2 * i + 1
        text.append(old.format(i=i) + "\n" + new.format(i=i) + "\n")
        typed_lines[rid] = (n, n + 1)
    control_start = HOST_INCLUDES.count("\n") + len(host) + 2 * len(TYPED) + 1
    text += [f"void control_{i}() {{ (void)({c}); }}\n" for i, c in enumerate(CONTROLS)]
    hsrc = tmp_path / "host_probes.cu"
    hsrc.write_text("".join(text))
    dtext = ["#include <cuda_runtime.h>\n"]
    for i, (rid, name) in enumerate(device):
        # called with the arity the rule documents: the host pass declares some of them (`__shfl`), and a host
        # error would stop nvcc before the device pass that rejects them
        params = next(r for r in BB_RULES if r.id == rid).spec["names"][name] or ["a"]
        args = ", ".join("cudaRoundNearest" if p == "mode" else "x[0]" for p in params)
        dtext.append(f"__global__ void dprobe_{i}(int *x) {{ (void){name}({args}); }}  // {rid}\n")
        lines[(rid, name)] = i + 2
    dsrc = tmp_path / "device_probes.cu"
    # CM532/CM1067: device-side cudaDeviceSynchronize (CDP1) is not declared for device code in 13.0; nvcc reports it in
    # a later phase than the undefined intrinsics above, so it gets a translation unit of its own
    csrc = tmp_path / "cdp1_probe.cu"
    csrc.write_text("#include <cuda_runtime.h>\n__global__ void dprobe_cdp1() { cudaDeviceSynchronize(); }  // CM532\n")
    dsrc.write_text("".join(dtext))
    vsrc = tmp_path / "vote_probes.cu"
    vsrc.write_text("".join(f"__global__ void vprobe_{i}(int *x) {{ x[0] = {n}(x[0]); }}\n" for i, (_, n) in enumerate(ptxas))
                    + "__global__ void vcontrol(int *x) { x[0] = __all_sync(~0u, x[0]); }\n")
    limit = ["-Xcudafe", "--error_limit=100000"]
    with ThreadPoolExecutor(4) as pool:
        hout, dout, vout, cout = pool.map(lambda a: _compile(*a), [(hsrc, limit), (dsrc, limit), (vsrc, []), (csrc, [])])
    assert "#error" not in hout and "cannot open source file" not in hout, hout[-3000:]
    bad = _unproven(host, lines, _errors_by_line(hout, hsrc)) + _unproven(device, lines, _errors_by_line(dout, dsrc))
    if not any("cudaDeviceSynchronize" in m for m in _errors_by_line(cout, csrc).get(2, [])):
        bad.append("CM532: device-side cudaDeviceSynchronize compiles")
    herr = _errors_by_line(hout, hsrc)
    for i, c in enumerate(CONTROLS):
        if herr.get(control_start + i):
            bad.append(f"control `{c}` does not compile (a header is missing, so probes prove nothing): {herr[control_start + i]}")
    for rid, (old, new) in typed_lines.items():
        if not herr.get(old):
            bad.append(f"{rid}: the old form compiles")
        if herr.get(new):
            bad.append(f"{rid}: the new form does not compile: {herr[new]}")
    assert not bad, "classed build-break but nvcc 13.0 does not reject it:\n" + "\n".join(bad)
    vote = len(re.findall(r"ptxas.*error\s*: Instruction 'vote' without '\.sync' is not supported", vout))
    assert vote == len(ptxas), vout[-3000:]


def test_every_build_break_rule_has_a_proof():
    """Each build-break rule is proven by name probes or by a fixture that test_nvcc.py compiles and that
    expects a finding of the rule in a `before` file marked `compile.before: fail`."""
    host, device, ptxas = _probe_names()
    probed = {rid for rid, _ in host + device + ptxas}
    by_fixture: set[str] = set()
    for case in load_cases(FIXTURES):
        if case.before is None or case.compile.get("before") != "fail":
            continue
        by_fixture |= {rid for _, rid in expected_findings(case.before.read_text(errors="replace"))}
    own_tests = {"CM404", "CM1108"} | CDP1_DEVICE | set(TYPED) | set(RUNTIME_ONLY)  # the architecture list, the C++ dialect, typed snippets
    missing = sorted(r.id for r in BB_RULES if r.id not in probed | by_fixture | own_tests)
    assert not missing, f"build-break rules with no compiler proof: {missing}"
    stale = sorted(rid for rid in BY_FIXTURE if rid not in by_fixture and rid in {r.id for r in BB_RULES})
    assert not stale, f"BY_FIXTURE rules without a failing fixture: {stale}"


@pytest.mark.nvcc
def test_nvrtc_architectures_below_75_are_gone():
    """CM404 flags `-arch=sm_NN`/`compute_NN` for NN < 75: nvcc 13.0 (whose architecture list NVRTC 13.0 shares)
    does not list any of them."""
    rule = next(r for r in BB_RULES if r.id == "CM404")
    rx = re.compile(rule.spec["regex"])
    p = subprocess.run([nvcc_path() or "nvcc", "--list-gpu-arch"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    listed = p.stdout.split()
    assert any(a == "compute_75" for a in listed), listed
    assert not [a for a in listed if rx.match(a)], listed
    assert rx.match("compute_70") and rx.match("sm_52")


@pytest.mark.nvcc
def test_cccl_needs_cpp17(tmp_path):
    """CM1108 (opt-in): Thrust/CUB/libcu++ in CUDA 13.0 reject dialects below C++17."""
    src = tmp_path / "d.cu"
    src.write_text("#include <thrust/device_vector.h>\nint main() { return 0; }\n")
    cmd = [nvcc_path() or "nvcc", "-std=c++14", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "d.o")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode != 0 and "requires at least C++17" in p.stdout + p.stderr, (p.stdout + p.stderr)[-2000:]


@pytest.mark.parametrize("name,code,expected", [
    ("g.c", "", [("CM507", "build-break")]),  # C: no overload, the call does not compile
    # C++: the inline 5-argument overload of cuda_runtime.h:498 compiles it (not deprecated): only the opt-in CM523
    ("g.cpp", "", [("CM523", "hygiene")]),
    ("g.cu", "", [("CM523", "hygiene")]),
    ("g.h", "", [("CM523", "hygiene")]),  # a header no .c file includes is compiled as C++ (language.file_language)
])
def test_cm507_follows_the_language(name, code, expected):
    from cudamigrate.scan.engine import Engine, Options

    src = (code + "#include <cuda_runtime.h>\nint f(cudaGraphExec_t *e, cudaGraph_t g) {\n"
           "  return (int)cudaGraphInstantiate(e, g, NULL, NULL, 0);\n}\n").encode()
    eng = Engine(all_rules(), Options(select=["CM507", "CM523"]))
    res = eng.scan_bytes(Path(name), src)
    assert [(f.rule_id, f.cost.impact) for f in res.findings] == expected
    # by default (no selection) the C++ call is not reported at all
    default = Engine(all_rules(), Options()).scan_bytes(Path(name), src)
    assert [f.rule_id for f in default.findings if f.rule_id in ("CM507", "CM523")] == [r for r, _ in expected if r == "CM507"]
    # the driver API has no overload: cuGraphInstantiate is a build break in every language
    drv = b"#include <cuda.h>\nvoid f(CUgraphExec *e, CUgraph g) { cuGraphInstantiate(e, g, NULL, NULL, 0); }\n"
    assert [f.cost.impact for f in eng.scan_bytes(Path(name), drv).findings] == ["build-break"]
