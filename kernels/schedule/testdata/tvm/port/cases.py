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

# ---- compute_at / reverse_compute_at (test_tir_schedule_compute_at.py)
def ew2(name, params, allocs, shape=(128, 128), c_loops=None, b_loops=None, b_bind=None, idx=""):
    n = shape[-1]
    bl = b_loops or [["i", 128], ["j", 128]]
    d = wl(name, params, [
        dict(blk("B", bl, [("vi", "S", 128), ("vj", "S", 128)], f"B[{idx}vi, vj] = A[{idx}vi, vj] * 2.0"), **({"bindings": b_bind} if b_bind else {})),
        blk("C", c_loops or [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], f"C[{idx}vi, vj] = B[{idx}vi, vj] + 1.0")],
        allocs=allocs)
    return d
TWO = ew2("two_elementwise", [("A", [128, 128]), ("C", [128, 128])], [("B", [128, 128])])
TILED = ew2("tiled", [("A", [128, 128]), ("C", [128, 128])], [("B", [128, 128])],
            b_loops=[["i_0", 8], ["j_0", 8], ["i_1", 16], ["j_1", 16]], b_bind=["i_0 * 16 + i_1", "j_0 * 16 + j_1"])
TILED3 = ew2("tiled_trivial_binding", [("A", [1, 128, 128]), ("C", [1, 128, 128])], [("B", [1, 128, 128])],
            b_loops=[["i_0", 8], ["j_0", 8], ["i_1", 16], ["j_1", 16]], b_bind=["i_0 * 16 + i_1", "j_0 * 16 + j_1"], idx="0, ")
SIGAC = 'def main(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32")):\n' + FA
L2C = lambda b, outs: ["GetLoops", [b], [], outs]

case("compute-at-two-elementwise", "test_tir_schedule_compute_at.py::test_compute_at_two_elementwise (expected two_elementwise_after_compute_at)", TWO,
     [["GetBlock", [], ["B", "main"], ["b0"]], ["GetBlock", [], ["C", "main"], ["b1"]], L2C("b1", ["l2", "l3"]),
      ["ComputeAt", ["b0", "l2"], [1, -1], []]],
     SIGAC + '''    # with T.block("root"):
    B = T.alloc_buffer((128, 128))
    for i in range(128):
        for ax0, ax1 in T.grid(1, 128):
            with T.block("B"):
                vi = T.axis.spatial(128, i + ax0)
                vj = T.axis.spatial(128, ax1)
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for j in range(128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(B[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = B[vi, vj] + T.float32(1)
''', note="The consumer block, named \"B\" in the test module (names are free in its structural check), is \"C\".")

REV_TILED = '''    # with T.block("root"):
    B = T.alloc_buffer((%(s)s))
    for i_0, j_0, i_1 in T.grid(8, 8, 16):
        for j_1 in range(16):
            with T.block("B"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + j_1)
                T.reads(A[%(i)svi, vj])
                T.writes(B[%(i)svi, vj])
                B[%(i)svi, vj] = A[%(i)svi, vj] * T.float32(2)
        for ax0 in range(16):
            with T.block("C"):
                vi = T.axis.spatial(128, i_0 * 16 + i_1)
                vj = T.axis.spatial(128, j_0 * 16 + ax0)
                T.reads(B[%(i)svi, vj])
                T.writes(C[%(i)svi, vj])
                C[%(i)svi, vj] = B[%(i)svi, vj] + T.float32(1)
'''
NOTE_AX = "The loop the primitive creates, `j_1` in the test module, is `ax0` as TVM's compute-at names new loops."
RCA = [["GetBlock", [], ["C", "main"], ["b0"]], ["GetBlock", [], ["B", "main"], ["b1"]], L2C("b1", ["l2", "l3", "l4", "l5"]),
       ["ReverseComputeAt", ["b0", "l4"], [0, -1], []]]
case("reverse-compute-at-tiled", "test_tir_schedule_compute_at.py::test_reverse_compute_at_tiled (expected tiled_after_reverse_compute_at)", TILED,
     RCA, SIGAC + REV_TILED % {"s": "128, 128", "i": ""}, note=NOTE_AX)
case("reverse-compute-at-tiled-trivial-binding", "test_tir_schedule_compute_at.py::test_reverse_compute_at_tiled_trivial_binding (expected tiled_trivial_binding_after_reverse_compute_at)", TILED3,
     RCA, 'def main(A: T.Buffer((1, 128, 128), "float32"), C: T.Buffer((1, 128, 128), "float32")):\n' + FA + REV_TILED % {"s": "1, 128, 128", "i": "0, "}, note=NOTE_AX)

case("compute-at-fail-loop-is-ancestor", "test_tir_schedule_compute_at.py::test_fail_loop_is_ancestor_of_block", TWO,
     [["GetBlock", [], ["B", "main"], ["b0"]], L2C("b0", ["l1", "l2"]), ["ComputeAt", ["b0", "l1"], [0, -1], []]], error="tvm.tir.ScheduleError: ancestor of block")
case("compute-at-fail-output-block", "test_tir_schedule_compute_at.py::test_fail_output_block", TILED,
     [["GetBlock", [], ["C", "main"], ["b0"]], ["GetBlock", [], ["B", "main"], ["b1"]], L2C("b1", ["l2", "l3", "l4", "l5"]),
      ["ComputeAt", ["b0", "l2"], [0, -1], []]], error="tvm.tir.ScheduleError: output block")
FACU = wl("fail_all_consumers_under_loop", [("A", [128, 128]), ("C", [128, 128]), ("D", [128, 128])], [
    blk("B", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "B[vi, vj] = A[vi, vj] * 2.0"),
    blk("C", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "C[vi, vj] = B[vi, vj] + 1.0"),
    blk("D", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "D[vi, vj] = B[vi, vj] + 1.0")], allocs=[("B", [128, 128])])
case("compute-at-fail-all-consumers-under-loop", "test_tir_schedule_compute_at.py::test_fail_all_consumers_under_loop", FACU,
     [["GetBlock", [], ["B", "main"], ["b0"]], ["GetBlock", [], ["C", "main"], ["b1"]], L2C("b1", ["l2", "l3"]),
      ["ComputeAt", ["b0", "l2"], [0, -1], []]], error="tvm.tir.ScheduleError: requires all the consumer")
FAPU = wl("fail_all_producers_under_loop", [("A", [128, 128]), ("D", [128, 128])], [
    blk("B", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "B[vi, vj] = A[vi, vj] * 2.0"),
    blk("C", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "C[vi, vj] = A[vi, vj] + 1.0"),
    blk("D", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "D[vi, vj] = B[vi, vj] + C[vi, vj]")], allocs=[("B", [128, 128]), ("C", [128, 128])])
case("reverse-compute-at-fail-all-producers-under-loop", "test_tir_schedule_compute_at.py::test_fail_all_producers_under_loop", FAPU,
     [["GetBlock", [], ["D", "main"], ["b0"]], ["GetBlock", [], ["C", "main"], ["b1"]], L2C("b1", ["l2", "l3"]),
      ["ReverseComputeAt", ["b0", "l2"], [0, -1], []]], error="tvm.tir.ScheduleError: requires all the producer")

CONCAT = wl("concat_two_elemwise", [("x", [16]), ("y", [8]), ("T_concat", [24])], [
    blk("T_add_1", [["i", 16]], [("ax", "S", 16)], "T_add_1[ax] = x[ax] + T.float32(1)"),
    blk("T_add_2", [["i", 8]], [("ax", "S", 8)], "T_add_2[ax] = y[ax] + T.float32(2)"),
    blk("T_concat", [["i", 24]], [("ax", "S", 24)], "T_concat[ax] = T.if_then_else(16 <= ax, T_add_2[ax - 16], T_add_1[ax])")],
    allocs=[("T_add_1", [16]), ("T_add_2", [8])])
case("compute-at-concat", "test_tir_schedule_compute_at.py::test_compute_at_concat (expected concat_two_elemwise_after_compute_at)", CONCAT,
     [["GetBlock", [], ["T_concat", "main"], ["b0"]], ["GetBlock", [], ["T_add_1", "main"], ["b1"]], ["GetBlock", [], ["T_add_2", "main"], ["b2"]],
      L2C("b0", ["l3"]), ["ComputeAt", ["b1", "l3"], [0, -1], []], ["ComputeAt", ["b2", "l3"], [0, -1], []]],
     'def main(x: T.Buffer((16,), "float32"), y: T.Buffer((8,), "float32"), T_concat: T.Buffer((24,), "float32")):\n' + FA + '''    # with T.block("root"):
    T_add_1 = T.alloc_buffer((16,))
    T_add_2 = T.alloc_buffer((8,))
    for i in range(24):
        with T.block("T_add_1"):
            ax = T.axis.spatial(16, i)
            T.where(i < 16)
            T.reads(x[ax])
            T.writes(T_add_1[ax])
            T_add_1[ax] = x[ax] + T.float32(1)
        with T.block("T_add_2"):
            ax = T.axis.spatial(8, i - 16)
            T.where(16 <= i)
            T.reads(y[ax])
            T.writes(T_add_2[ax])
            T_add_2[ax] = y[ax] + T.float32(2)
        with T.block("T_concat"):
            ax = T.axis.spatial(24, i)
            T.reads(T_add_2[ax - 16], T_add_1[ax])
            T.writes(T_concat[ax])
            T_concat[ax] = T.if_then_else(16 <= ax, T_add_2[ax - 16], T_add_1[ax])
''')

REPEAT = wl("tiled_repeat_op", [("x", [4]), ("T_repeat", [64])], [
    blk("T_add", [["i0", 4]], [("ax0", "S", 4)], "T_add[ax0] = x[ax0] + 1.0"),
    dict(blk("T_repeat", [["i0_0", 8], ["i0_1", 8]], [("ax0", "S", 64)], "T_repeat[ax0] = T_add[ax0 // 16]"), bindings=["i0_0 * 8 + i0_1"])],
    allocs=[("T_add", [4])])
case("compute-at-tiled-repeat-op", "test_tir_schedule_compute_at.py::test_compute_at_tiled_repeat_op (expected tiled_repeat_op_after_compute_at)", REPEAT,
     [["GetBlock", [], ["T_repeat", "main"], ["b0"]], L2C("b0", ["l1", "l2"]), ["GetBlock", [], ["T_add", "main"], ["b3"]],
      ["ComputeAt", ["b3", "l1"], [0, -1], []]],
     'def main(x: T.Buffer((4,), "float32"), T_repeat: T.Buffer((64,), "float32")):\n' + FA + '''    # with T.block("root"):
    T_add = T.alloc_buffer((4,))
    for i0_0 in range(8):
        with T.block("T_add"):
            ax0 = T.axis.spatial(4, i0_0 // 2)
            T.reads(x[ax0])
            T.writes(T_add[ax0])
            T_add[ax0] = x[ax0] + T.float32(1)
        for i0_1 in range(8):
            with T.block("T_repeat"):
                ax0 = T.axis.spatial(64, i0_0 * 8 + i0_1)
                T.reads(T_add[ax0 // 16])
                T.writes(T_repeat[ax0])
                T_repeat[ax0] = T_add[ax0 // 16]
''')

FDFM = wl("floordiv_and_floormod_indices", [("X", [16, 16]), ("Y", [256])], [
    blk("A", [["i", 16], ["j", 16]], [("v_i", "S", 16), ("v_j", "S", 16)], "temp[v_i, v_j] = X[v_j, v_i] + 1.0"),
    blk("B", [["i", 256]], [("v_i", "S", 256)], "Y[v_i] = temp[v_i // 16, v_i % 16]")], allocs=[("temp", [16, 16])])
case("reverse-compute-at-floordiv-floormod", "test_tir_schedule_compute_at.py::test_reverse_compute_at_floordiv_and_floormod_indices (expected floordiv_and_floormod_indices_after_reverse_compute_at)", FDFM,
     [["GetBlock", [], ["A", "main"], ["b0"]], ["GetBlock", [], ["B", "main"], ["b1"]], L2C("b0", ["l2", "l3"]),
      ["ReverseComputeAt", ["b1", "l2"], [0, -1], []]],
     'def main(X: T.Buffer((16, 16), "float32"), Y: T.Buffer((256,), "float32")):\n' + FA + '''    # with T.block("root"):
    temp = T.alloc_buffer((16, 16))
    for i in range(16):
        for j in range(16):
            with T.block("A"):
                v_i, v_j = T.axis.remap("SS", [i, j])
                T.reads(X[v_j, v_i])
                T.writes(temp[v_i, v_j])
                temp[v_i, v_j] = X[v_j, v_i] + T.float32(1)
        for ax0 in range(16):
            with T.block("B"):
                v_i = T.axis.spatial(256, i * 16 + ax0)
                T.reads(temp[v_i // 16, v_i % 16])
                T.writes(Y[v_i])
                Y[v_i] = temp[v_i // 16, v_i % 16]
''', note="This is TVM's affine path (UpdateBlockVarDomainAffine): the consumer reads temp[v_i // 16, v_i % 16].")

# ---- cache_read / cache_write (test_tir_schedule_cache_read_write.py), before = elementwise
EWC = wl("elementwise", [("A", [128, 128]), ("C", [128, 128])], TWO["blocks"], allocs=[("B", [128, 128])])
def stage(name, src, dst):
    return f'''    for ax0, ax1 in T.grid(128, 128):
        with T.block("{name}"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads({src}[v0, v1])
            T.writes({dst}[v0, v1])
            {dst}[v0, v1] = {src}[v0, v1]
'''
def bblk(src, dst):
    return f'''    for i, j in T.grid(128, 128):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads({src}[vi, vj])
            T.writes({dst}[vi, vj])
            {dst}[vi, vj] = {src}[vi, vj] * T.float32(2)
'''
def cblk(src, dst):
    return f'''    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads({src}[vi, vj])
            T.writes({dst}[vi, vj])
            {dst}[vi, vj] = {src}[vi, vj] + T.float32(1)
'''
ROOT = '    # with T.block("root"):\n'
NOTE_CACHE = ("Names as TVM's cache primitives give them (the test compares structurally, where names are free): "
              "stage buffer and block `<buffer>_<scope>`, stage loops `ax0, ax1`, stage iter vars `v0, v1`.")
GBC = [["GetBlock", [], ["B", "main"], ["b0"]], ["GetBlock", [], ["C", "main"], ["b1"]]]
case("cache-read-elementwise", "test_tir_schedule_cache_read_write.py::test_cache_read_elementwise (expected cache_read_elementwise)", EWC,
     GBC + [["CacheRead", ["b0", []], [0, "global"], ["b2"]], ["CacheRead", ["b1", []], [0, "local"], ["b3"]]],
     SIGAC + ROOT + '''    B = T.alloc_buffer((128, 128))
    A_global = T.alloc_buffer((128, 128))
    B_local = T.alloc_buffer((128, 128), scope="local")
''' + stage("A_global", "A", "A_global") + bblk("A_global", "B") + stage("B_local", "B", "B_local") + cblk("B_local", "C"), note=NOTE_CACHE)
case("cache-read-continuous", "test_tir_schedule_cache_read_write.py::test_continuous_cache_read (expected continuous_cache_read)", EWC,
     GBC + [["CacheRead", ["b1", []], [0, "shared"], ["b2"]], ["CacheRead", ["b1", []], [0, "local"], ["b3"]]],
     SIGAC + ROOT + '''    B = T.alloc_buffer((128, 128))
    B_shared = T.alloc_buffer((128, 128), scope="shared")
    B_shared_local = T.alloc_buffer((128, 128), scope="local")
''' + bblk("A", "B") + stage("B_shared", "B", "B_shared") + stage("B_shared_local", "B_shared", "B_shared_local") + cblk("B_shared_local", "C"),
     note=NOTE_CACHE + " The second stage caches B_shared, so TVM names it B_shared_local (B_local in the test module).")
case("cache-write-elementwise", "test_tir_schedule_cache_read_write.py::test_cache_write_elementwise (expected cache_write_elementwise)", EWC,
     GBC + [["CacheWrite", ["b0", []], [0, "local"], ["b2"]], ["CacheWrite", ["b1", []], [0, "global"], ["b3"]]],
     SIGAC + ROOT + '''    B = T.alloc_buffer((128, 128))
    B_local = T.alloc_buffer((128, 128), scope="local")
    C_global = T.alloc_buffer((128, 128))
''' + bblk("A", "B_local") + stage("B_local", "B_local", "B") + cblk("B", "C_global") + stage("C_global", "C_global", "C"), note=NOTE_CACHE)
case("cache-write-continuous", "test_tir_schedule_cache_read_write.py::test_continuous_cache_write (expected continuous_cache_write)", EWC,
     GBC + [["CacheWrite", ["b0", []], [0, "shared"], ["b2"]], ["CacheWrite", ["b0", []], [0, "local"], ["b3"]]],
     SIGAC + ROOT + '''    B = T.alloc_buffer((128, 128))
    B_shared = T.alloc_buffer((128, 128), scope="shared")
    B_shared_local = T.alloc_buffer((128, 128), scope="local")
''' + bblk("A", "B_shared_local") + stage("B_shared_local", "B_shared_local", "B_shared") + stage("B_shared", "B_shared", "B") + cblk("B", "C"),
     note=NOTE_CACHE + " The second stage caches B_shared, so TVM names it B_shared_local (B_local in the test module).")
for prim, idx, scope, test in [("CacheRead", 1, "global", "test_cache_read_fail_index_out_of_bound"), ("CacheRead", 0, "test_scope", "test_cache_read_fail_invalid_storage_scope"),
                               ("CacheWrite", 1, "global", "test_cache_write_fail_index_out_of_bound"), ("CacheWrite", 0, "test_scope", "test_cache_write_fail_invalid_storage_scope")]:
    kind = "index" if idx else "scope"
    case(f"{'cache-read' if prim == 'CacheRead' else 'cache-write'}-fail-{kind}", f"test_tir_schedule_cache_read_write.py::{test}", EWC,
         GBC + [[prim, ["b0", []], [idx, scope], ["b2"]]], error="tvm.tir.ScheduleError")

# ---- storage_align (test_tir_schedule_storage_align.py). Its element_wise has B and C under one
# loop i0; the before module is two_elementwise with C reverse-computed-at B's outer loop (a trace
# prefix), which is that module up to names.
SA_PREFIX = [["GetBlock", [], ["B", "main"], ["b0"]], ["GetBlock", [], ["C", "main"], ["b1"]], L2C("b0", ["l2", "l3"]),
             ["ReverseComputeAt", ["b1", "l2"], [0, -1], []]]
SA_EXP = SIGAC + ROOT + '''    B = T.alloc_buffer((128, 128))
    for i in range(128):
        for j in range(128):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj])
                T.writes(B[vi, vj])
                T.block_attr({"buffer_dim_align": [[0, 0, 128, 127]]})
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for ax0 in range(128):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, ax0])
                T.reads(B[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = B[vi, vj] + T.float32(1)
'''
NOTE_SA = ("Before module: two_elementwise with C reverse-computed-at B's outer loop by the first "
           "instructions of trace.json (the test's element_wise up to names: loops i0/ax1/i1 are i/j/ax0).")
case("storage-align", "test_tir_schedule_storage_align.py::test_storage_align (expected element_wise_storage_align)", TWO,
     SA_PREFIX + [["StorageAlign", ["b0"], [0, 0, 128, 127], []]], SA_EXP, note=NOTE_SA)
case("storage-align-update", "test_tir_schedule_storage_align.py::test_storage_align_update (expected element_wise_storage_align)", TWO,
     SA_PREFIX + [["StorageAlign", ["b0"], [0, 0, 128, 0], []], ["StorageAlign", ["b0"], [0, 0, 128, 127], []]], SA_EXP, note=NOTE_SA)
for name, blkrv, attrs, test in [("invalid-factor-0", "b0", [0, 0, 0, 127], "test_storage_align_invalid_factor1"),
                                  ("invalid-factor-minus-1", "b0", [0, 0, -1, 127], "test_storage_align_invalid_factor2"),
                                  ("invalid-buffer", "b1", [0, 0, 128, 127], "test_storage_align_invalid_buffer"),
                                  ("invalid-buffer-index", "b0", [2, 0, 128, 127], "test_storage_align_invalid_buffer_index"),
                                  ("invalid-axis", "b0", [0, 2, 128, 127], "test_storage_align_invalid_axis")]:
    case(f"storage-align-{name}", f"test_tir_schedule_storage_align.py::{test}", TWO,
         SA_PREFIX + [["StorageAlign", [blkrv], attrs, []]], error="tvm.tir.ScheduleError", note=NOTE_SA)

# ---- rfactor (test_tir_schedule_rfactor.py)
SQS = wl("square_sum", [("A", [16, 256, 256]), ("C", [16])], [
    blk("C", [["b0", 16], ["i0", 256], ["j0", 256]], [("b", "S", 16), ("i", "R", 256), ("j", "R", 256)],
        "C[b] = C[b] + A[b, i, j] * A[b, i, j]", init="C[b] = 0.0")])
case("rfactor-square-sum", "test_tir_schedule_rfactor.py::test_reduction_rfactor_square_sum (expected square_sum_rfactor)", SQS,
     [["GetBlock", [], ["C", "main"], ["b0"]], L2C("b0", ["l1", "l2", "l3"]), ["RFactor", ["l3"], [1], ["b4"]]],
     'def main(A: T.Buffer((16, 256, 256), "float32"), C: T.Buffer((16,), "float32")):\n' + FA + ROOT + '''    C_rf = T.alloc_buffer((16, 256))
    for b0, i0, j0 in T.grid(16, 256, 256):
        with T.block("C_rf"):
            vj0, b, i = T.axis.remap("SSR", [j0, b0, i0])
            T.reads(A[b, i, vj0])
            T.writes(C_rf[b, vj0])
            with T.init():
                C_rf[b, vj0] = T.float32(0)
            C_rf[b, vj0] = C_rf[b, vj0] + A[b, i, vj0] * A[b, i, vj0]
    for b0, j0 in T.grid(16, 256):
        with T.block("C"):
            vj0, b = T.axis.remap("RS", [j0, b0])
            T.reads(C_rf[b, vj0])
            T.writes(C[b])
            with T.init():
                C[b] = T.float32(0)
            C[b] = C[b] + C_rf[b, vj0]
''', note=("Names as TVM v0.20 gives them and its printer shows them: the rfactor buffer is `C.rf` "
           "(printed `C_rf`), the new iter var of the rfactor loop j0 is `vj0` in both blocks, the "
           "write-back block copies iter var `b` and loops `b0`, `j0` (sibling nests reuse names in "
           "the printer; the test module names them i0..i2, vi2, i0_1, i2_1, vi2_1, b_1). Read regions "
           "are those TVM builds (RFactorBlockCreator: the old block's reads; WriteBackBlockCreator: "
           "the rfactor buffer only)."))
EW2P = wl("element_wise", [("A", [128, 128]), ("B", [128, 128])], [
    blk("B", [["i", 128], ["j", 128]], [("vi", "S", 128), ("vj", "S", 128)], "B[vi, vj] = A[vi, vj] * 2.0")])
case("rfactor-fail-not-reduction-block", "test_tir_schedule_rfactor.py::test_reduction_rfactor_not_reduction_block1", EW2P,
     [["GetBlock", [], ["B", "main"], ["b0"]], L2C("b0", ["l1", "l2"]), ["RFactor", ["l1"], [0], ["b3"]]], error="tvm.tir.ScheduleError")
ROWSUM = wl("rowsum", [("A", [128, 128]), ("B", [128])], [
    blk("B", [["i", 128], ["k", 128]], [("vi", "S", 128), ("vk", "R", 128)], "B[vi] = B[vi] + A[vi, vk]", init="B[vi] = 0.0")])
case("rfactor-fail-wrong-loops", "test_tir_schedule_rfactor.py::test_reduction_rfactor_wrong_loops1", ROWSUM,
     [["GetBlock", [], ["B", "main"], ["b0"]], L2C("b0", ["l1", "l2"]), ["RFactor", ["l1"], [0], ["b3"]]], error="tvm.tir.ScheduleError")

# ---- more split/fuse/reorder/decompose cases
L3B = lambda b: ["GetLoops", [b], [], ["l1", "l2", "l3"]]
case("split-inferred-factor", "test_tir_schedule_split_fuse.py::test_split_with_inferred_factor (expected elementwise_split_case1)", EW3,
     [GB("B"), L3, ["Split", ["l1", "None", 1, 64], [1, 0], ["l4", "l5", "l6"]], ["Split", ["l2", 2, "None", 64], [1, 0], ["l7", "l8", "l9"]],
      ["Split", ["l3", 2, 1, "None"], [1, 0], ["l10", "l11", "l12"]]],
     SIG3 + '''    # with T.block("root"):
    for i_0, i_1, i_2, j_0, j_1, j_2, k_0, k_1, k_2 in T.grid(2, 1, 64, 2, 1, 64, 2, 1, 64):
        with T.block("B"):
            vi = T.axis.spatial(128, i_0 * 64 + i_1 * 64 + i_2)
            vj = T.axis.spatial(128, j_0 * 64 + j_1 * 64 + j_2)
            vk = T.axis.spatial(128, k_0 * 64 + k_1 * 64 + k_2)
            T.reads(A[vi, vj, vk])
            T.writes(B[vi, vj, vk])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
''', note="Loop vars i1..k3 of the test module are named i_0..k_2, as TVM's Split names them.")
case("split-with-predicate", "test_tir_schedule_split_fuse.py::test_split_with_predicate (expected elementwise_split_with_predicate)", EW3,
     [GB("B"), L3, ["Split", ["l1", 1000, 2, 3], [1, 0], ["l4", "l5", "l6"]], ["Split", ["l2", "None", 129], [1, 0], ["l7", "l8"]],
      ["Split", ["l3", 3, "None"], [1, 0], ["l9", "l10"]]],
     SIG3 + '''    # with T.block("root"):
    for i_0, i_1, i_2, j_0, j_1, k_0, k_1 in T.grid(1000, 2, 3, 1, 129, 3, 43):
        with T.block("B"):
            vi = T.axis.spatial(128, i_0 * 6 + i_1 * 3 + i_2)
            vj = T.axis.spatial(128, j_0 * 129 + j_1)
            vk = T.axis.spatial(128, k_0 * 43 + k_1)
            T.where((i_0 * 2 + i_1) * 3 + i_2 < 128 and j_0 * 129 + j_1 < 128 and k_0 * 43 + k_1 < 128)
            T.reads(A[vi, vj, vk])
            T.writes(B[vi, vj, vk])
            B[vi, vj, vk] = A[vi, vj, vk] * T.float32(2)
''', note="Loop vars renamed i_0.. as TVM's Split names them. The test's module has A and B matched in the order B, A; the parameters are (a, b).")

COLSUM = wl("colsum_with_vectorization", [("A", [128, 32]), ("B", [32])], [
    blk("B", [["k", 128], ["i", 32]], [("vk", "R", 128), ("vi", "S", 32)], "B[vi] = B[vi] + A[vk, vi]", init="B[vi] = T.float32(0)")])
case("decompose-reduction-vectorized", "test_tir_schedule_reduction.py::test_reduction_decompose_with_different_for_kind (expected colsum_decompose_with_vectorization)", COLSUM,
     [GB("B"), ["GetLoops", ["b0"], [], ["l1", "l2"]], ["Vectorize", ["l2"], [], []], ["DecomposeReduction", ["b0", "l1"], [], ["b3"]]],
     'def main(A: T.Buffer((128, 32), "float32"), B: T.Buffer((32,), "float32")):\n' + FA + ROOT + '''    for i_init in T.vectorized(32):
        with T.block("B_init"):
            vi = T.axis.spatial(32, i_init)
            T.reads()
            T.writes(B[vi])
            B[vi] = T.float32(0)
    for k in range(128):
        for i in T.vectorized(32):
            with T.block("B_update"):
                vk, vi = T.axis.remap("RS", [k, i])
                T.reads(B[vi], A[vk, vi])
                T.writes(B[vi])
                B[vi] = B[vi] + A[vk, vi]
''', note=("Before module: the vectorized loop i is made by a Vectorize at the start of trace.json. "
           "The init loop keeps the loop kind (TVM copies kind and thread binding, not annotations) and is named i_init; "
           "the update block is B_update (the test asserts get_block(\"B_update\"))."))

# elementwise_with_seq / elementwise_non_single_branch: C and B under shared loops i, j; built
# from two loop nests and ComputeAt(C, j of B) (preserve_unit_loops False).
SEQ = wl("elementwise_with_seq", [("A", [128] * 3), ("B", [128] * 3)], [
    blk("C", [["i", 128], ["j", 128], ["k", 128]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "S", 128)], "C[vi, vj, vk] = A[vi, vj, vk] * 2.0"),
    blk("B", [["i", 128], ["j", 128], ["k", 128]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "S", 128)], "B[vi, vj, vk] = C[vi, vj, vk] * 2.0")],
    allocs=[("C", [128] * 3)])
SEQ_PREFIX = [["GetBlock", [], ["C", "main"], ["b0"]], ["GetBlock", [], ["B", "main"], ["b1"]], ["GetLoops", ["b1"], [], ["l2", "l3", "l4"]],
              ["ComputeAt", ["b0", "l3"], [0, -1], []]]
NOTE_SEQ = "Before module: C computed at B's loop j by the first instructions of trace.json (the test's module up to names)."
case("fuse-fail-not-only-child", "test_tir_schedule_split_fuse.py::test_fuse_fail_not_only_child", SEQ,
     SEQ_PREFIX + [["Fuse", ["l3", "l4"], [1], ["l5"]]], error="tvm.tir.ScheduleError", note=NOTE_SEQ)
case("reorder-fail-non-single-branch", "test_tir_schedule_reorder.py::test_reorder_fail_with_non_single_branch_loop", SEQ,
     SEQ_PREFIX + [["Reorder", ["l4", "l2"], [], []]], error="tvm.tir.ScheduleError", note=NOTE_SEQ)
case("reorder-fail-non-single-branch-2", "test_tir_schedule_reorder.py::test_reorder_fail_with_non_single_branch_loop (second part)", SEQ,
     SEQ_PREFIX + [["GetLoops", ["b0"], [], ["l5", "l6", "l7"]], ["Reorder", ["l4", "l2", "l7"], [], []]], error="tvm.tir.ScheduleError", note=NOTE_SEQ)

NOTE_ANN = ("Before module: elementwise with the annotation put on loop k by the first instructions of trace.json; "
            "the test's value is True, ours the integer 1 (the refusal depends only on the annotation being there).")
ANN_PREFIX = [GB("B"), L3, ["Annotate", ["l3", 1], ["useless_annotation"], []]]
case("fuse-fail-annotation", "test_tir_schedule_split_fuse.py::test_fuse_split_fail_with_annotation", EW3,
     ANN_PREFIX + [["Fuse", ["l2", "l3"], [1], ["l4"]]], error="tvm.tir.ScheduleError", note=NOTE_ANN)
case("split-fail-annotation", "test_tir_schedule_split_fuse.py::test_fuse_split_fail_with_annotation", EW3,
     ANN_PREFIX + [["Split", ["l3", "None", 10], [1, 0], ["l4", "l5"]]], error="tvm.tir.ScheduleError", note=NOTE_ANN)
NOTE_BIND = "Before module: elementwise with loop k bound to threadIdx.x by the first instructions of trace.json."
BIND_PREFIX = [GB("B"), L3, ["Bind", ["l3"], ["threadIdx.x"], []]]
case("fuse-fail-thread-binding", "test_tir_schedule_split_fuse.py::test_fuse_split_fail_with_thread_binding", EW3,
     BIND_PREFIX + [["Fuse", ["l2", "l3"], [1], ["l4"]]], error="tvm.tir.ScheduleError", note=NOTE_BIND)
case("split-fail-thread-binding", "test_tir_schedule_split_fuse.py::test_fuse_split_fail_with_thread_binding", EW3,
     BIND_PREFIX + [["Split", ["l3", "None", 10], [1, 0], ["l4", "l5"]]], error="tvm.tir.ScheduleError", note=NOTE_BIND)

NOTAFF = wl("elementwise_not_affine", [("A", [128] * 4), ("B", [128] * 4)], [
    dict(blk("B", [["i", 128], ["j", 128], ["k", 128], ["l", 8]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "S", 128), ("vl", "S", 128)],
             "B[vi, vj, vk, vl] = A[vi, vj, vk, vl] * 2.0"), bindings=["i", "j", "k", "l * 16"])])
case("reorder-fail-not-affine", "test_tir_schedule_reorder.py::test_reorder_fail_not_affine_bindings", NOTAFF,
     [GB("B"), L4, ["Reorder", ["l4", "l1"], [], []]], error="tvm.tir.ScheduleError")

GCB = wl("grouped_channel_bias", [("X", [720, 8, 8]), ("Y", [720, 8, 8])], [
    blk("init", [["i", 45]], [("vi", "S", 45)], 'B[vi] = T.Cast("float32", vi)'),
    dict(blk("compute", [["c_o", 2], ["h", 8], ["w", 8], ["c_i", 360]], [("hh", "S", 8), ("ww", "S", 8), ("cc", "S", 720)],
             "Y[cc, hh, ww] = X[cc, hh, ww] + B[cc // 16]"), bindings=["h", "w", "c_o * 360 + c_i"])],
    allocs=[("B", [45])])
case("compute-at-non-perfect-channel-group", "test_tir_schedule_compute_at.py::test_compute_at_non_perfect_channel_group (expected grouped_channel_bias_non_perfect_tiled)", GCB,
     [["GetBlock", [], ["compute", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4"]], ["GetBlock", [], ["init", "main"], ["b5"]],
      ["ComputeAt", ["b5", "l1"], [0, -1], []]],
     'def main(X: T.Buffer((720, 8, 8), "float32"), Y: T.Buffer((720, 8, 8), "float32")):\n' + FA + ROOT + '''    B = T.alloc_buffer((45,))
    for c_o in range(2):
        for ax0 in range(23):
            with T.block("init"):
                vi = T.axis.spatial(45, c_o * 22 + ax0)
                T.reads()
                T.writes(B[vi])
                B[vi] = T.Cast("float32", vi)
        for h, w, c_i in T.grid(8, 8, 360):
            with T.block("compute"):
                hh, ww = T.axis.remap("SS", [h, w])
                cc = T.axis.spatial(720, c_o * 360 + c_i)
                T.reads(X[cc, hh, ww], B[cc // 16])
                T.writes(Y[cc, hh, ww])
                Y[cc, hh, ww] = X[cc, hh, ww] + B[cc // 16]
''', note="`B[vi] = vi` stores an int32 into a float32 buffer; TVMScript inserts the cast, printed T.Cast(\"float32\", vi).")

NUTC = wl("non_uniform_tiled_conv", [("x", [1, 3, 100, 100]), ("w", [16, 3, 3, 3]), ("y", [1, 16, 98, 98])], [
    blk("cache", [["ax0", 1], ["ax1", 3], ["ax2", 100], ["ax3", 100]], [("v0", "S", 1), ("v1", "S", 3), ("v2", "S", 100), ("v3", "S", 100)],
        "x_global[v0, v1, v2, v3] = x[v0, v1, v2, v3]"),
    dict(blk("compute", [["n", 1], ["c_o", 16], ["h", 98], ["w_", 98], ["c_i", 3], ["kh", 3], ["kw", 3]],
             [("nn", "S", 1), ("cc", "S", 16), ("hh", "S", 98), ("ww", "S", 98), ("rc", "R", 3), ("rh", "R", 3), ("rw", "R", 3)],
             "y[nn, cc, hh, ww] = y[nn, cc, hh, ww] + x_global[nn, cc // 16 * 3 + rc, hh + rh, ww + rw] * w[cc, rc, rh, rw]",
             init="y[nn, cc, hh, ww] = T.float32(0)"), bindings=["0", "c_o", "h", "w_", "c_i", "kh", "kw"])],
    allocs=[("x_global", [1, 3, 100, 100])])
case("compute-at-non-uniform-tiled-conv", "test_tir_schedule_compute_at.py::test_compute_at_non_uniform_tiled_conv (expected non_uniform_tiled_conv_after_compute_at)", NUTC,
     [["GetBlock", [], ["compute", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4", "l5", "l6", "l7"]],
      ["Split", ["l3", 7, 15], [1, 0], ["l8", "l9"]], ["Split", ["l4", 7, 15], [1, 0], ["l10", "l11"]],
      ["Reorder", ["l8", "l10", "l1", "l2", "l9", "l11"], [], []],
      ["GetBlock", [], ["cache", "main"], ["b12"]], ["ComputeAt", ["b12", "l10"], [0, -1], []]],
     'def main(x: T.Buffer((1, 3, 100, 100), "float32"), w: T.Buffer((16, 3, 3, 3), "float32"), y: T.Buffer((1, 16, 98, 98), "float32")):\n' + FA + ROOT + '''    x_global = T.alloc_buffer((1, 3, 100, 100))
    for h_0, w__0 in T.grid(7, 7):
        for ax0, ax1, ax2 in T.grid(3, 17, 17):
            with T.block("cache"):
                v0 = T.axis.spatial(1, 0)
                v1 = T.axis.spatial(3, ax0)
                v2 = T.axis.spatial(100, h_0 * 15 + ax1)
                v3 = T.axis.spatial(100, w__0 * 15 + ax2)
                T.where(h_0 * 15 + ax1 < 100 and w__0 * 15 + ax2 < 100)
                T.reads(x[v0, v1, v2, v3])
                T.writes(x_global[v0, v1, v2, v3])
                x_global[v0, v1, v2, v3] = x[v0, v1, v2, v3]
        for n, c_o, h_1, w__1, c_i, kh, kw in T.grid(1, 16, 15, 15, 3, 3, 3):
            with T.block("compute"):
                nn = T.axis.spatial(1, 0)
                cc = T.axis.spatial(16, c_o)
                hh = T.axis.spatial(98, h_0 * 15 + h_1)
                ww = T.axis.spatial(98, w__0 * 15 + w__1)
                rc, rh, rw = T.axis.remap("RRR", [c_i, kh, kw])
                T.where(h_0 * 15 + h_1 < 98 and w__0 * 15 + w__1 < 98)
                T.reads(x_global[nn, cc // 16 * 3 + rc, hh + rh, ww + rw], w[cc, rc, rh, rw])
                T.writes(y[nn, cc, hh, ww])
                with T.init():
                    y[nn, cc, hh, ww] = T.float32(0)
                y[nn, cc, hh, ww] = y[nn, cc, hh, ww] + x_global[nn, cc // 16 * 3 + rc, hh + rh, ww + rw] * w[cc, rc, rh, rw]
''', note=("Before module: the compute block's loops h and w_ (w_ because w is the weight's name) split by 15 and "
           "reordered by the first instructions of trace.json, the test's module up to loop names "
           "(h_o/h_i/w_o/w_i are h_0/h_1/w__0/w__1, as Split names them)."))

TMM = wl("transformed_matmul", [("A", [128, 128]), ("B", [128, 128]), ("C", [128, 128])], [
    dict(blk("update", [["i0", 128], ["i1", 128], ["i2_outer", 4], ["i2_inner_outer", 8], ["i2_inner_inner", 4]],
             [("vi", "S", 128), ("vj", "S", 128), ("vk", "R", 128)],
             "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vj, vk]", init="C[vi, vj] = 0.0"),
         bindings=["i0", "i1", "i2_outer * 32 + i2_inner_outer * 4 + i2_inner_inner"])])
TMM_LOOPS = [["GetBlock", [], ["update", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4", "l5"]]]
MM_RF = SIGMM + ROOT + '''    C_rf = T.alloc_buffer((4, 128, 128))
    for i0, i1, i2_outer, i2_inner_outer, i2_inner_inner in T.grid(128, 128, 4, 8, 4):
        with T.block("update_rf"):
            vi2_inner_inner, vi, vj, vi2_outer, vi2_inner_outer = T.axis.remap("SSSRR", [i2_inner_inner, i0, i1, i2_outer, i2_inner_outer])
            T.reads(A[vi, vi2_outer * 32 + vi2_inner_outer * 4 + vi2_inner_inner], B[vj, vi2_outer * 32 + vi2_inner_outer * 4 + vi2_inner_inner])
            T.writes(C_rf[vi2_inner_inner, vi, vj])
            with T.init():
                C_rf[vi2_inner_inner, vi, vj] = T.float32(0)
            C_rf[vi2_inner_inner, vi, vj] = C_rf[vi2_inner_inner, vi, vj] + A[vi, vi2_outer * 32 + vi2_inner_outer * 4 + vi2_inner_inner] * B[vj, vi2_outer * 32 + vi2_inner_outer * 4 + vi2_inner_inner]
    for i0, i1, i2_inner_inner in T.grid(128, 128, 4):
        with T.block("update"):
            vi2_inner_inner, vi, vj = T.axis.remap("RSS", [i2_inner_inner, i0, i1])
            T.reads(C_rf[vi2_inner_inner, vi, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + C_rf[vi2_inner_inner, vi, vj]
'''
NOTE_MMRF = ("Printed as TVM v0.20 names things (see rfactor-square-sum): rfactor buffer `C.rf` printed `C_rf`, "
             "rf iter vars `v<loop>`, write-back loops and iter vars reuse the sibling nest's names; the rfactor "
             "block's iter vars all bind loop vars of their extent, so they print as one T.axis.remap.")
case("rfactor-matmul", "test_tir_schedule_rfactor.py::test_reduction_rfactor_matmul (expected matmul_rfactor)", TMM,
     TMM_LOOPS + [["RFactor", ["l5"], [0], ["b6"]]], MM_RF, note=NOTE_MMRF)
case("rfactor-matmul-factor-axis-minus-3", "test_tir_schedule_rfactor.py::test_reduction_rfactor_factor_axis_range (expected matmul_rfactor)", TMM,
     TMM_LOOPS + [["RFactor", ["l5"], [-3], ["b6"]]], MM_RF, note=NOTE_MMRF)
for name, ax in [("3", 3), ("minus-4", -4)]:
    case(f"rfactor-fail-factor-axis-{name}", "test_tir_schedule_rfactor.py::test_reduction_rfactor_factor_axis_range_fail", TMM,
         TMM_LOOPS + [["RFactor", ["l5"], [ax], ["b6"]]], error="tvm.tir.ScheduleError")
NSP = wl("matmul_not_stage_pipeline", [("A", [256, 256]), ("B", [256, 256]), ("D", [256, 256])], [
    blk("C", [["i", 128], ["j", 128], ["k", 128]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "R", 128)],
        "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]", init="C[vi, vj] = 0.0"),
    blk("D", [["i", 256], ["j", 256]], [("vi", "S", 256), ("vj", "S", 256)], "D[vi, vj] = C[vi, vj]")], allocs=[("C", [256, 256])])
case("rfactor-fail-not-stage-pipeline", "test_tir_schedule_rfactor.py::test_reduction_rfactor_not_stage_pipeline", NSP,
     [["GetBlock", [], ["C", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]], ["RFactor", ["l3"], [0], ["b4"]]], error="tvm.tir.ScheduleError")
NSBA = wl("matmul_not_same_buffer_access", [("A", [128, 128]), ("B", [128, 128]), ("C", [128, 128])], [
    blk("C", [["i", 128], ["j", 128], ["k", 128]], [("vi", "S", 128), ("vj", "S", 128), ("vk", "R", 128)],
        "C[vj, vi] = C[vj, vi] + A[vi, vk] * B[vk, vj]", init="C[vi, vj] = 0.0")])
case("rfactor-fail-not-same-buffer-access", "test_tir_schedule_rfactor.py::test_reduction_rfactor_not_same_buffer_access", NSBA,
     [["GetBlock", [], ["C", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]], ["RFactor", ["l3"], [0], ["b4"]]], error="tvm.tir.ScheduleError")
