import json, os
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..") + "/"
HDR = '# from tvm.script import tir as T\n\n@T.prim_func\n'
FA = '    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})\n'

def blk(name, loops, iters, body, init=None, ann=None):
    d = {"name": name, "loops": loops, "iters": [{"var": v, "kind": k, "extent": e} for v, k, e in iters], "body": body}
    if init: d["init"] = init
    if ann: d["annotations"] = ann
    return d

def wl(name, params, blocks, allocs=None):
    d = {"family": "custom", "name": name, "params": [{"buffer": b, "shape": s} for b, s in params]}
    if allocs: d["alloc_buffers"] = [{"buffer": b, "shape": s} for b, s in allocs]
    d["blocks"] = blocks
    return d

EW3 = wl("elementwise", [("A", [128]*3), ("B", [128]*3)],
         [blk("B", [["i", 128], ["j", 128], ["k", 128]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "S", 128)], "B[vi, vj, vk] = A[vi, vj, vk] * 2.0")])
EW4 = wl("elementwise", [("A", [128]*4), ("B", [128]*4)],
         [blk("B", [["i", 128], ["j", 128], ["k", 128], ["l", 128]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "S", 128), ("vl", "S", 128)], "B[vi, vj, vk, vl] = A[vi, vj, vk, vl] * 2.0")])
EW2 = wl("element_wise", [("A", [128, 128]), ("C", [128, 128])],
         [blk("B", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "B[vi, vj] = A[vi, vj] * 2.0"),
          blk("C", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "C[vi, vj] = B[vi, vj] + 1.0")],
         allocs=[("B", [128, 128])])
def MM(ann=None):
    return wl("matmul" if not ann else "matmul_with_annotation", [("A", [128, 128]), ("B", [128, 128]), ("C", [128, 128])],
         [blk("update", [["i", 128], ["j", 128], ["k", 128]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "R", 128)],
              "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]", init="C[vi, vj] = 0.0", ann=ann)])

def trace(insts):
    return json.dumps([insts, []], separators=(",", ":"))

GB = lambda n: ["GetBlock", [], [n, "main"], ["b0"]]

def case(name, src, before, insts, expected=None, error=None, note=""):
    d = OUT + name
    os.makedirs(d, exist_ok=True)
    open(d + "/before.json", "w").write(json.dumps(before, indent=1) + "\n")
    open(d + "/trace.json", "w").write(trace(insts) + "\n")
    if expected is not None:
        open(d + "/expected.tir", "w").write(HDR + expected)
    if error is not None:
        open(d + "/expected-error.txt", "w").write(error + "\n")
    open(d + "/SOURCE.md", "w").write(f"# {name}\n\napache/tvm v0.20.0 `tests/python/tir-schedule/{src}`.\n{note}\n")

SIG3 = 'def main(A: T.Buffer((128, 128, 128), "float32"), B: T.Buffer((128, 128, 128), "float32")):\n' + FA
SIG4 = 'def main(A: T.Buffer((128, 128, 128, 128), "float32"), B: T.Buffer((128, 128, 128, 128), "float32")):\n' + FA
SIG2 = 'def main(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):\n' + FA
SIGMM = 'def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):\n' + FA

L3 = ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]]
L4 = ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4"]]

case("fuse", "test_tir_schedule_split_fuse.py::test_fuse (expected elementwise_fused)", EW3,
     [GB("B"), L3, ["Fuse", ["l1", "l2", "l3"], [1], ["l4"]]],
     SIG3 + '''    # with T.block("root"):
    for i_j_k_fused in range(2097152):
        with T.block("B"):
            vi = T.axis.spatial(128, i_j_k_fused // 16384)
            vj = T.axis.spatial(128, i_j_k_fused % 16384 // 128)
            vk = T.axis.spatial(128, i_j_k_fused % 128)
            T.reads(A[vi, vj, vk])
            T.writes(B[vi, vj, vk])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
''', note="Loop var `fused` of the test module is named `i_j_k_fused`, as TVM's Fuse names it (the test compares structurally, where names are free).")

case("split", "test_tir_schedule_split_fuse.py::test_split (expected elementwise_split_case0)", EW3,
     [GB("B"), L3, ["Split", ["l1", 2, 1, 64], [1, 0], ["l4", "l5", "l6"]], ["Split", ["l2", 4, 32], [1, 0], ["l7", "l8"]],
      ["Split", ["l3", 16, 8], [1, 0], ["l9", "l10"]]],
     SIG3 + '''    # with T.block("root"):
    for i_0, i_1, i_2, j_0, j_1, k_0, k_1 in T.grid(2, 1, 64, 4, 32, 16, 8):
        with T.block("B"):
            vi = T.axis.spatial(128, i_0 * 64 + i_1 * 64 + i_2)
            vj = T.axis.spatial(128, j_0 * 32 + j_1)
            vk = T.axis.spatial(128, k_0 * 8 + k_1)
            T.reads(A[vi, vj, vk])
            T.writes(B[vi, vj, vk])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
''', note="Loop vars i1 i2 i3 j1 j2 k1 k2 of the test module are named i_0 i_1 i_2 j_0 j_1 k_0 k_1, as TVM's Split names them.")

for i, (loop, f) in enumerate([("l1", [-2, -64]), ("l2", [0, "None"]), ("l3", ["None", -16])]):
    case(f"split-non-positive-{i}", "test_tir_schedule_split_fuse.py::test_split_with_non_positive_factors", EW3,
         [GB("B"), L3, ["Split", [loop] + f, [1, 0], ["l4", "l5"]]], error="tvm.tir.ScheduleError")

case("reorder", "test_tir_schedule_reorder.py::test_reorder (expected elementwise_reordered)", EW4,
     [GB("B"), L4, ["Reorder", ["l4", "l1"], [], []]],
     SIG4 + '''    # with T.block("root"):
    for l, j, k, i in T.grid(128, 128, 128, 128):
        with T.block("B"):
            vi, vj, vk, vl = T.axis.remap("SSSS", [i, j, k, l])
            T.reads(A[vi, vj, vk, vl])
            T.writes(B[vi, vj, vk, vl])
            B[vi, vj, vk, vl] = A[vi, vj, vk, vl] * T.float32(2)
''')
case("reorder2", "test_tir_schedule_reorder.py::test_reorder2 (expected elementwise_reordered2)", EW4,
     [GB("B"), L4, ["Reorder", ["l3", "l1", "l4"], [], []]],
     SIG4 + '''    # with T.block("root"):
    for k, j, i, l in T.grid(128, 128, 128, 128):
        with T.block("B"):
            vi, vj, vk, vl = T.axis.remap("SSSS", [i, j, k, l])
            T.reads(A[vi, vj, vk, vl])
            T.writes(B[vi, vj, vk, vl])
            B[vi, vj, vk, vl] = A[vi, vj, vk, vl] * T.float32(2)
''')
case("reorder-multi-appearance", "test_tir_schedule_reorder.py::test_reorder_fail_with_multi_appearance_loops", EW4,
     [GB("B"), L4, ["Reorder", ["l3", "l1", "l1"], [], []]], error="tvm.tir.ScheduleError")

case("set-scope", "test_tir_schedule_set_scope.py::test_set_scope (expected element_wise_set_scope)", EW2,
     [GB("B"), ["SetScope", ["b0"], [0, "shared"], []]],
     SIG2 + '''    # with T.block("root"):
    B_shared = T.alloc_buffer((128, 128), scope="shared")
    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(B_shared[vi, vj])
            B_shared[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(B_shared[vi, vj])
            T.writes(C[vi, vj])
            C[vi, vj] = B_shared[vi, vj] + T.float32(1)
''')
case("set-scope-output-buffer", "test_tir_schedule_set_scope.py::test_set_scope_fail_on_output_buffer", EW2,
     [GB("C"), ["SetScope", ["b0"], [0, "shared"], []]], error="tvm.tir.ScheduleError")
case("set-scope-index-1", "test_tir_schedule_set_scope.py::test_set_scope_fail_on_index_out_of_bound", EW2,
     [GB("B"), ["SetScope", ["b0"], [1, "shared"], []]], error="tvm.tir.ScheduleError")
case("set-scope-index-minus-1", "test_tir_schedule_set_scope.py::test_set_scope_fail_on_index_out_of_bound", EW2,
     [GB("B"), ["SetScope", ["b0"], [-1, "shared"], []]], error="tvm.tir.ScheduleError")
case("set-scope-invalid-scope", "test_tir_schedule_set_scope.py::test_set_scope_fail_on_invalid_scope", EW2,
     [GB("B"), ["SetScope", ["b0"], [0, "test_scope"], []]], error="tvm.tir.ScheduleError")

DEC = '''    # with T.block("root"):
    for i_init, j_init in T.grid(128, 128):
        with T.block("update_init"):
            vi, vj = T.axis.remap("SS", [i_init, j_init])
            T.reads()
            T.writes(C[vi, vj])
%s            C[vi, vj] = T.float32(0)
    for i, j, k in T.grid(128, 128, 128):
        with T.block("update_update"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(C[vi, vj], A[vi, vk], B[vj, vk])
            T.writes(C[vi, vj])
%s            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]
'''
NOTE_DEC = ("Block names `init`/`update` of the test module are `update_init`/`update_update`, as TVM's "
            "DecomposeReduction names them, and loops `i_init`, `j_init` (copy_with_suffix(\"_init\")); "
            "the read regions are the ones TVMScript infers for the update block (C first).")
case("decompose-reduction", "test_tir_schedule_reduction.py::test_reduction_decompose0 (expected matmul_decompose0)", MM(),
     [GB("update"), L3, ["DecomposeReduction", ["b0", "l1"], [], ["b4"]]], SIGMM + DEC % ("", ""), note=NOTE_DEC)
ANN = '            T.block_attr({"test_annotation": 1})\n'
case("decompose-reduction-annotation", "test_tir_schedule_reduction.py::test_reduction_decompose_with_annotation (expected matmul_decompose_with_annotation)",
     MM(ann={"test_annotation": 1}),
     [GB("update"), L3, ["DecomposeReduction", ["b0", "l1"], [], ["b4"]]], SIGMM + DEC % (ANN, ANN), note=NOTE_DEC)
