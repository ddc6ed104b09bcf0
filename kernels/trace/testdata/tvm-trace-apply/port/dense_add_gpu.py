"""dense-add-gpu: the schedule that TVM's ScheduleUsingAnchorTrace applies to DenseAdd in
test_meta_schedule_trace_apply.py::test_dense_add_gpu, as a trace on our workload:
ComputeInline of compile_engine_const (InlinePostBlocks), the anchor trace of
../../tvm-traces/cuda-dense-nt-128 (GetChildBlocks returns T_add too; TVM maps only the
first four), then ReverseComputeInline of T_add into its spatial producer. RVs renumbered."""
import json, os, re, sys
HERE = os.path.dirname(os.path.abspath(__file__))
anchor = json.load(open(os.path.join(HERE, "../../tvm-traces/cuda-dense-nt-128/trace.json")))
OUT = os.path.join(HERE, "../dense-add-gpu/trace.json")
insts, decs = anchor
dec_at = {i: d for i, d in decs}
out, outdec = [], []
out.append(["GetBlock", [], ["compile_engine_const", "main"], ["X:const"]])
out.append(["ComputeInline", ["X:const"], [], []])
for i, (k, ins, attrs, outs) in enumerate(insts):
    if k == "GetChildBlocks":
        outs = outs + ["X:tadd_child"]
    if i in dec_at:
        outdec.append((len(out), dec_at[i]))
    out.append([k, ins, attrs, outs])
out.append(["GetBlock", [], ["T_add", "main"], ["X:tadd"]])
out.append(["ReverseComputeInline", ["X:tadd"], [], []])
# Renumber: every RV gets the next global number in order of definition.
names, n = {}, 0
def rn(x):
    if isinstance(x, list):
        return [rn(y) for y in x]
    if isinstance(x, str) and x in names:
        return names[x]
    return x
final = []
for k, ins, attrs, outs in out:
    ins = rn(ins)
    new_outs = []
    for o in outs:
        p = o[0] if not o.startswith("X:") else {"X:const": "b", "X:tadd_child": "b", "X:tadd": "b"}[o]
        names[o] = f"{p}{n}"; n += 1
        new_outs.append(names[o])
    final.append([k, ins, attrs, new_outs])
# Floats must keep TVM's 20-digit text: re-insert them from the original file's bytes.
raw = json.dumps([final, [[i, d] for i, d in outdec]], separators=(",", ":"))
raw = raw.replace("0.2,", "0.2000000000000000111,").replace("0.2]", "0.2000000000000000111]")
open(OUT, "w").write(raw + "\n")
