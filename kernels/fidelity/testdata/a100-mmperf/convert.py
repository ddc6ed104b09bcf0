"""Convert mmperf's Ansor (auto_scheduler) CUDA matmul tuning logs into
dragonx timings: a custom workload spec per shape, a MetaSchedule trace per
record, and a CSV in the layout of dragonx kernel fidelity -measured.

Only records of Ansor's multi-level-tiling sketch (the one MetaSchedule's
CUDA multi-level tiling reproduces: cache_write local, SSSRRSRS, two shared
cache reads at the outer reduction loop, cooperative fetch, unroll pragma)
with a valid measurement (error_no 0) and perfect tiles are converted;
the others are counted and skipped.

usage: python3 convert.py MIRROR_GIT_DIR COMMIT OUTDIR LOG_PATH... """
import json, subprocess, sys, os, csv, random

UNROLL = [0, 16, 64, 512, 1024]

def skeleton(steps):
    """The record's steps with the sampled values masked."""
    out = []
    for s in steps:
        s = list(s)
        if s[0] == "SP":
            s = s[:3] + ["E", "L"] + s[5:]
        if s[0] == "PR":
            s = s[:3] + ["P"]
        out.append(json.dumps(s))
    return out

# The sketch every converted record follows (values masked): stages 0 A,
# 1 A.shared, 2 B, 3 B.shared, 4 C.local, 5 C after the cache steps.
TEMPLATE = [json.dumps(s) for s in [
    ["CHW", 2, "local"], ["SP", 2, 0, "E", "L", 1], ["SP", 2, 5, "E", "L", 1], ["SP", 2, 10, "E", "L", 1],
    ["RE", 2, [0, 5, 1, 6, 2, 7, 10, 11, 3, 8, 12, 4, 9]], ["FSP", 3, 0, 1, 3], ["FSP", 3, 4, 2, 3],
    ["RE", 3, [0, 4, 1, 5, 2, 6, 3, 7]], ["CA", 2, 3, 5], ["CHR", 1, "shared", [2]], ["CA", 2, 3, 6],
    ["CHR", 0, "shared", [3]], ["CA", 1, 4, 6], ["FU", 5, [0, 1]], ["AN", 5, 0, 5], ["FU", 5, [1, 2]],
    ["AN", 5, 1, 4], ["FU", 5, [2, 3]], ["AN", 5, 2, 6], ["FU", 3, [0, 1]], ["SP", 3, 0, "E", "L", 1],
    ["AN", 3, 1, 2], ["FFSP", 3, 0, [2, 1], 1, 1], ["AN", 3, 1, 6], ["FU", 1, [0, 1]], ["SP", 1, 0, "E", "L", 1],
    ["AN", 1, 1, 2], ["FFSP", 1, 0, [2, 1], 1, 1], ["AN", 1, 1, 6], ["PR", 4, 0, "P"]]]

def trace(block, ti, tj, tk, vec_a, vec_b, unroll_idx, threads):
    insts = [
        ["GetBlock", [], [block, "main"], ["b0"]],
        ["GetBlock", [], ["root", "main"], ["b1"]],
        ["Annotate", ["b0", "\"SSSRRSRS\""], ["meta_schedule.tiling_structure"], []],
        ["GetLoops", ["b0"], [], ["l2", "l3", "l4"]],
        ["SamplePerfectTile", ["l2"], [5, 64], ["v5", "v6", "v7", "v8", "v9"]],
        ["Split", ["l2", "v5", "v6", "v7", "v8", "v9"], [1, 0], ["l10", "l11", "l12", "l13", "l14"]],
        ["SamplePerfectTile", ["l3"], [5, 64], ["v15", "v16", "v17", "v18", "v19"]],
        ["Split", ["l3", "v15", "v16", "v17", "v18", "v19"], [1, 0], ["l20", "l21", "l22", "l23", "l24"]],
        ["SamplePerfectTile", ["l4"], [3, 64], ["v25", "v26", "v27"]],
        ["Split", ["l4", "v25", "v26", "v27"], [1, 0], ["l28", "l29", "l30"]],
        ["Reorder", ["l10", "l20", "l11", "l21", "l12", "l22", "l28", "l29", "l13", "l23", "l30", "l14", "l24"], [], []],
        ["Fuse", ["l10", "l20"], [1], ["l31"]],
        ["Bind", ["l31"], ["blockIdx.x"], []],
        ["Fuse", ["l11", "l21"], [1], ["l32"]],
        ["Bind", ["l32"], ["vthread.x"], []],
        ["Fuse", ["l12", "l22"], [1], ["l33"]],
        ["Bind", ["l33"], ["threadIdx.x"], []],
        ["Annotate", ["b0", 32 if threads >= 32 else 1], ["meta_schedule.thread_extent_low_inclusive"], []],
        ["Annotate", ["b0", 1024], ["meta_schedule.thread_extent_high_inclusive"], []],
        ["CacheWrite", ["b0", []], [0, "local"], ["b34"]],
        ["ReverseComputeAt", ["b34", "l33"], [1, -1], []],
        ["CacheRead", ["b0", ["b0"]], [0, "shared"], ["b35"]],
        ["ComputeAt", ["b35", "l28"], [1, -1], []],
        ["GetLoops", ["b35"], [], ["l36", "l37", "l38", "l39", "l40", "l41"]],
        ["Fuse", ["l40", "l41"], [1], ["l42"]],
        ["Annotate", ["b35", vec_a], ["meta_schedule.cooperative_fetch"], []],
        ["CacheRead", ["b0", ["b0"]], [1, "shared"], ["b43"]],
        ["ComputeAt", ["b43", "l28"], [1, -1], []],
        ["GetLoops", ["b43"], [], ["l44", "l45", "l46", "l47", "l48", "l49"]],
        ["Fuse", ["l48", "l49"], [1], ["l50"]],
        ["Annotate", ["b43", vec_b], ["meta_schedule.cooperative_fetch"], []],
        ["SampleCategorical", [], [UNROLL, [0.2] * 5], ["v51"]],
        ["Annotate", ["b1", "v51"], ["meta_schedule.unroll_explicit"], []],
    ]
    return [insts, [[4, ti], [6, tj], [8, tk], [31, unroll_idx]]]

def spec(M, N, K, dtype):
    return {
        "family": "custom",
        "name": f"matmul_{M}x{N}x{K}_{dtype}",
        "dtype": dtype,
        "description": "mmperf tvm_tuner matmul: C[i,j] = sum_k A[i,k] * B[k,j]",
        "params": [{"buffer": "A", "shape": [M, K]}, {"buffer": "B", "shape": [K, N]}, {"buffer": "C", "shape": [M, N]}],
        "blocks": [{
            "name": "C",
            "loops": [["i", M], ["j", N], ["k", K]],
            "iters": [{"var": "vi", "kind": "S", "extent": M}, {"var": "vj", "kind": "S", "extent": N}, {"var": "vk", "kind": "R", "extent": K}],
            "init": f"C[vi, vj] = T.{dtype}(0)",
            "body": "C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]",
        }],
    }

def tiles(extent, lengths):
    p = 1
    for x in lengths:
        p *= x
    if extent % p:
        return None
    return [extent // p] + list(lengths)

def main():
    git, commit, outdir, per = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    logs = sys.argv[5:]
    os.makedirs(outdir + "/workloads", exist_ok=True)
    os.makedirs(outdir + "/traces", exist_ok=True)
    rows, stats = [], {}
    ref = None
    for path in logs:
        text = subprocess.run(["git", "--git-dir", git, "show", f"{commit}:{path}"], capture_output=True, text=True, check=True).stdout
        st = stats.setdefault(path, {"records": 0, "error": 0, "sketch": 0, "imperfect": 0, "ok": 0})
        cands = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            st["records"] += 1
            rec = json.loads(line)
            wl = json.loads(rec["i"][0][0])
            target = rec["i"][0][1]
            name, M, N, K, dtype = wl
            costs, err = rec["r"][0], rec["r"][1]
            if err != 0:
                st["error"] += 1
                continue
            steps = rec["i"][1][1]
            sk = skeleton(steps)
            if sk != TEMPLATE:
                st["sketch"] += 1
                continue
            sp = [s for s in steps if s[0] == "SP"]
            ti, tj, tk = tiles(M, sp[0][4]), tiles(N, sp[1][4]), tiles(K, sp[2][4])
            if None in (ti, tj, tk) or sp[0][3] != M or sp[1][3] != N or sp[2][3] != K:
                st["imperfect"] += 1
                continue
            vec_b, vec_a = sp[3][4][0], sp[4][4][0]
            unroll = int([s for s in steps if s[0] == "PR"][0][3].split("$")[1])
            threads = ti[2] * tj[2]
            wname = f"matmul_{M}x{N}x{K}_{dtype}"
            rid = f"mmperf_a100-{wname}-L{lineno:04d}"
            cands.append((rid, wname, (M, N, K, dtype), trace("C", ti, tj, tk, vec_a, vec_b, UNROLL.index(unroll), threads),
                          sum(costs) / len(costs), target, path, lineno))
            st["ok"] += 1
        random.Random(1).shuffle(cands)
        keep = sorted(cands[:per], key=lambda c: c[-1]) if per > 0 else cands
        st["kept"] = len(keep)
        for rid, wname, shape, tr, sec, target, path, lineno in keep:
            with open(f"{outdir}/workloads/{wname}.json", "w") as f:
                json.dump(spec(*shape), f, indent=1)
            with open(f"{outdir}/traces/{rid}.json", "w") as f:
                json.dump(tr, f, separators=(",", ":"))
            rows.append({"workload": f"workloads/{wname}.json", "trace": f"traces/{rid}.json", "device": "NVIDIA A100 (sm_80)",
                         "latency_s": f"{sec:.6e}", "source": "measured", "id": rid, "log": f"mmperf/mmperf@{commit[:7]}:{path}:{lineno}"})
    with open(f"{outdir}/measured.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    json.dump(stats, sys.stdout, indent=1)

main()
