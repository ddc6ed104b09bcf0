# Regenerates before.json and trace.json of the case folders (run from the repository root).
# expected.tir files are written by hand-checked runs; see ../README.md.
import json, os
root = 'kernels/postproc/testdata/tvm'
def wl(name, params, blocks, allocs=None):
    d = {"family": "custom", "name": name, "params": [{"buffer": b, "shape": s} for b, s in params]}
    if allocs: d["alloc_buffers"] = [{"buffer": b, "shape": s} for b, s in allocs]
    d["blocks"] = blocks
    return d
def write(case, before, insts, decisions=()):
    os.makedirs(f'{root}/{case}', exist_ok=True)
    json.dump(before, open(f'{root}/{case}/before.json', 'w'), indent=1)
    open(f'{root}/{case}/trace.json', 'w').write(json.dumps([insts, [list(d) for d in decisions]], separators=(',', ':')) + '\n')

matmul512 = wl("matmul", [("A", [512, 512]), ("B", [512, 512]), ("C", [512, 512])], [{
    "name": "C", "loops": [["i0", 512], ["i1", 512], ["i2", 512]],
    "iters": [{"var": "i", "kind": "S", "extent": 512}, {"var": "j", "kind": "S", "extent": 512}, {"var": "k", "kind": "R", "extent": 512}],
    "init": "C[i, j] = 0.0", "body": "C[i, j] = C[i, j] + A[i, k] * B[k, j]"}])

def coop(warp):
    I = []; D = []
    def add(kind, ins, attrs, outs, dec=None):
        if dec is not None: D.append((len(I), dec))
        I.append([kind, ins, attrs, outs])
    add("GetBlock", [], ["C", "main"], ["b0"])
    add("CacheWrite", ["b0", []], [0, "local"], ["b1"])
    add("GetLoops", ["b0"], [], ["l2", "l3", "l4"])
    if warp:
        add("Annotate", ["b0", 1], ["warp_execution"], [])
    add("SamplePerfectTile", ["l2"], [5, 64], ["v5", "v6", "v7", "v8", "v9"], [1, 16, 1, 2, 16])
    add("Split", ["l2", "v5", "v6", "v7", "v8", "v9"], [1, 0], ["l10", "l11", "l12", "l13", "l14"])
    add("SamplePerfectTile", ["l3"], [5, 64], ["v15", "v16", "v17", "v18", "v19"], [16, 1, 8, 2, 2])
    add("Split", ["l3", "v15", "v16", "v17", "v18", "v19"], [1, 0], ["l20", "l21", "l22", "l23", "l24"])
    add("SamplePerfectTile", ["l4"], [3, 64], ["v25", "v26", "v27"], [1, 16, 32])
    add("Split", ["l4", "v25", "v26", "v27"], [1, 0], ["l28", "l29", "l30"])
    add("Reorder", ["l10", "l20", "l11", "l21", "l12", "l22", "l28", "l29", "l13", "l23", "l30", "l14", "l24"], [], [])
    add("Fuse", ["l10", "l20"], [1], ["l31"]); add("Bind", ["l31"], ["blockIdx.x"], [])
    add("Fuse", ["l11", "l21"], [1], ["l32"]); add("Bind", ["l32"], ["vthread.x"], [])
    add("Fuse", ["l12", "l22"], [1], ["l33"]); add("Bind", ["l33"], ["threadIdx.y" if warp else "threadIdx.x"], [])
    add("CacheRead", ["b0", []], [0, "shared"], ["b34"])
    add("ComputeAt", ["b34", "l28"], [1, -1], [])
    add("GetLoops", ["b34"], [], ["l35", "l36", "l37", "l38", "l39", "l40"])
    add("Fuse", ["l39", "l40"], [1], ["l41"])
    add("SamplePerfectTile", ["l41"], [2, 4], ["v42", "v43"], [262144, 1])
    add("Annotate", ["b34", "v43"], ["meta_schedule.cooperative_fetch"], [])
    add("CacheRead", ["b0", []], [1, "shared"], ["b44"])
    add("ComputeAt", ["b44", "l28"], [1, -1], [])
    add("GetLoops", ["b44"], [], ["l45", "l46", "l47", "l48", "l49", "l50"])
    add("Fuse", ["l49", "l50"], [1], ["l51"])
    add("SamplePerfectTile", ["l51"], [2, 4], ["v52", "v53"], [8192, 2])
    add("Annotate", ["b44", "v53"], ["meta_schedule.cooperative_fetch"], [])
    add("ReverseComputeAt", ["b1", "l33"], [1, -1], [])
    add("EnterPostproc", [], [], [])
    return I, D

for case, warp in [("cooperative-fetch-matmul", False), ("cooperative-fetch-warp-execution", True)]:
    I, D = coop(warp)
    write(case, matmul512, I, D)

EP = [["EnterPostproc", [], [], []]]
# not a TVM case: the elementwise case made larger than 256 * 1024, for the three-way split
write("unbound-elementwise-large", wl("main", [("A", [1000, 1000]), ("B", [1000, 1000])], [{
    "name": "C", "loops": [["i", 1000], ["j", 1000]],
    "iters": [{"var": "vi", "kind": "S", "extent": 1000}, {"var": "vj", "kind": "S", "extent": 1000}],
    "body": "B[vi, vj] = A[vi, vj] + 1.0"}]), EP)
# RewriteUnboundBlock cases
write("unbound-elementwise", wl("main", [("A", [512, 512]), ("B", [512, 512])], [{
    "name": "C", "loops": [["i", 512], ["j", 512]],
    "iters": [{"var": "vi", "kind": "S", "extent": 512}, {"var": "vj", "kind": "S", "extent": 512}],
    "body": "B[vi, vj] = A[vi, vj] + 1.0"}]), EP)
write("unbound-norm-bmn", wl("main", [("A", [1, 256, 256]), ("D", [1])], [
    {"name": "C", "loops": [["i0", 1], ["i1", 256], ["i2", 256]],
     "iters": [{"var": "b", "kind": "S", "extent": 1}, {"var": "i", "kind": "R", "extent": 256}, {"var": "j", "kind": "R", "extent": 256}],
     "init": "C[b] = 0.0", "body": "C[b] = C[b] + A[b, i, j] * A[b, i, j]"},
    {"name": "D", "loops": [["i0", 1]], "iters": [{"var": "b", "kind": "S", "extent": 1}],
     "body": "D[b] = T.sqrt(C[b])"}], allocs=[("C", [1])]), EP)
bert_body = "T_reshape[ax0, ax1] = placeholder[((ax1 % 64 // 64 + (ax1 // 768 + ax0) % 64) // 64 + ax1 % 768 // 64) % 12, (ax1 % 64 // 64 + (ax1 // 768 + ax0) % 64) % 64, ax1 % 64 % 64]"
for case, n in [("unbound-bert-reshape", 1536)]:
    write(case, wl("main", [("placeholder", [12, 64, 64]), ("T_reshape", [64, 768])], [{
        "name": "T_reshape_1", "loops": [["i0_i1_fused_0", n], ["i0_i1_fused_1", 32]],
        "iters": [{"var": "ax0", "kind": "S", "extent": 64}, {"var": "ax1", "kind": "S", "extent": 768}],
        "bindings": ["(i0_i1_fused_0 * 32 + i0_i1_fused_1) // 768", "(i0_i1_fused_0 * 32 + i0_i1_fused_1) % 768"],
        "body": bert_body}]), EP)
write("unbound-unrolled-loop", wl("main", [("placeholder", [1, 56, 56, 64])], [{
    "name": "inverse", "loops": [["i2_0", 98], ["i3_0", 4], ["i2_1", 2], ["i3_1", 16], ["i0", 4], ["i1", 4], ["i4", 6], ["i5", 6]],
    "iters": [{"var": "vh", "kind": "S", "extent": 4}, {"var": "vw", "kind": "S", "extent": 4}, {"var": "p", "kind": "S", "extent": 196},
              {"var": "co", "kind": "S", "extent": 64}, {"var": "r_a", "kind": "R", "extent": 6}, {"var": "r_b", "kind": "R", "extent": 6}],
    "bindings": ["i0", "i1", "i2_0 * 2 + i2_1", "i3_0 * 16 + i3_1", "i4", "i5"],
    "init": "inverse[vh, vw, p, co] = 0.0", "body": "inverse[vh, vw, p, co] = inverse[vh, vw, p, co] + bgemm[r_a, r_b, p, co]"}],
    allocs=[("bgemm", [6, 6, 196, 64]), ("inverse", [4, 4, 196, 64])]),
    [["GetBlock", [], ["inverse", "main"], ["b0"]],
     ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8"]],
     ["Unroll", ["l5"], [], []], ["Unroll", ["l6"], [], []], ["Unroll", ["l7"], [], []], ["Unroll", ["l8"], [], []],
     ["EnterPostproc", [], [], []]])
