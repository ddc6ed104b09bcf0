import sys, re, ast, os, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract
from mlt import sketch
import ctr

SRC = sys.argv[1]  # test_meta_schedule_space_cuda.py at tag v0.20.0
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..") + "/"
text = open(SRC).read()
mods = extract.extract(SRC)

def decisions(test):
    body = text.split(f"def test_cuda_{test}():")[1].split("\ndef ")[0]
    out = {}
    for m in re.finditer(r"decision_(\d+) = (\[.*?\n    \])", body, re.S):
        out[int(m.group(1))] = (m.group(2), ast.literal_eval(m.group(2)))
    return out

bench = json.load(open(os.path.join(HERE, "../../../../workload/data/benchmarks.json")))["workloads"]
def shape0(fam):
    return next(w for w in bench if w["family"] == fam)

MLT = {
  # family: (blocks in program order, anchor, loop kinds, read ndims, AutoInline actions in order)
  "c1d": (["PadInput", "conv1d_nlc"], "conv1d_nlc", "SSSRR", [3, 3], [("ComputeInline", "PadInput")]),
  "c2d": (["PadInput", "conv2d_nhwc"], "conv2d_nhwc", "SSSSRRR", [4, 4], [("ComputeInline", "PadInput")]),
  "c3d": (["PadInput", "conv3d_ndhwc"], "conv3d_ndhwc", "SSSSSRRRR", [5, 5], [("ComputeInline", "PadInput")]),
  "cap": (["PadInput", "conv2d_capsule_nhwijc"], "conv2d_capsule_nhwijc", "SSSSSSRRRR", [6, 6], [("ComputeInline", "PadInput")]),
  "dep": (["PadInput", "depth_conv2d_nhwc"], "depth_conv2d_nhwc", "SSSSRR", [4, 4], [("ComputeInline", "PadInput")]),
  "dil": (["PadInput", "conv2d_nhwc"], "conv2d_nhwc", "SSSSRRR", [4, 4], [("ComputeInline", "PadInput")]),
  "gmm": (["Z"], "Z", "SSSR", [3, 3], []),
  "grp": (["PadInput", "conv2d_nhwc"], "conv2d_nhwc", "SSSSRRR", [4, 4], [("ComputeInline", "PadInput")]),
  "tbg": (["query_T", "value_T", "C"], "C", "SSSSR", [4, 4], [("ComputeInline", "value_T"), ("ComputeInline", "query_T")]),
  "cbr": (["PaddedInput", "Conv2dOutput", "bias_add", "bn_mul", "bn_add", "compute"], "Conv2dOutput", "SSSSRRR", [4, 4],
          [("ReverseComputeInline", "compute"), ("ReverseComputeInline", "bn_add"), ("ReverseComputeInline", "bn_mul"),
           ("ReverseComputeInline", "bias_add"), ("ComputeInline", "PaddedInput")]),
}

def write(folder, fam, i, wl, trace, dec_text, expected, line, method):
    d = OUT + folder
    os.makedirs(d, exist_ok=True)
    open(d + "/workload.json", "w").write(json.dumps(wl) + "\n")
    if trace is not None:
        open(d + "/trace.json", "w").write(trace + "\n")
    open(d + "/expected.tir", "w").write(expected)
    open(d + "/SOURCE.md", "w").write(f"""# {folder}: TVM's CUDA sketch {fam}_{i}

- Repository apache/tvm, tag v0.20.0, file `tests/python/meta_schedule/test_meta_schedule_space_cuda.py`,
  test `test_cuda_{fam}`, module `{fam}_{i}` (line {line}), workload `create_te_workload("{fam.upper()}", 0)`,
  target `nvidia/geforce-rtx-2080`.
- `expected.tir`: that module, ported as data (see ../README.md for the exact edits).
- `trace.json`: {method}
- `workload.json`: our spec of `create_te_workload("{fam.upper()}", 0)` (shape 0 of kernels/workload/data/benchmarks.json).

## The test's decisions (`decision_{i}`, verbatim)

```python
decision_{i} = {dec_text}
```
""")

def cats(dec):
    return [v for k, v in dec if k == "SampleCategorical"]
def tiles(dec):
    return [v for k, v in dec if k == "SamplePerfectTile"]

MLT_METHOD = ("reconstructed from the TVM v0.20 rule code (see ../README.md): MultiLevelTiling SSSRRSRS "
              "with CUDA reuse (write `local` at level 3, reads `shared` at level 4 with cooperative fetch), "
              "then AutoInline, then ParallelizeVectorizeUnroll on the root, filled with the decisions below.")

if __name__ == "__main__":
    for fam, (blocks, anchor, kinds, nd, inl) in MLT.items():
        decs = decisions(fam)
        dt, dec = decs[0]
        c = cats(dec)
        t = sketch(blocks, anchor, kinds, tiles(dec), c[:2], nd, inl, c[2])
        line, body = mods[f"{fam}_0"]
        write(f"{fam}-0", fam, 0, shape0(fam.upper()), t.dump(), dt, extract.normalise(body), line, MLT_METHOD)
        print(fam, "ok")
    CTR_METHOD = ("reconstructed from the TVM v0.20 rule code (see ../README.md): AutoInline, "
                  "CrossThreadReduction (GetConsumers, compute position, SampleCategorical over "
                  "[4..512], split/bind of the consumer, ComputeAt, SetScope shared, split/bind "
                  "of the reduction), ParallelizeVectorizeUnroll on the root, then AutoBind, "
                  "filled with the decisions below.")
    for fam, gen in (("nrm", ctr.nrm), ("sfm", ctr.sfm)):
        for i, (dt, dec) in sorted(decisions(fam).items()):
            t = gen(i, [v for _, v in dec])
            line, body = mods[f"{fam}_{i}"]
            write(f"{fam}-{i}", fam, i, shape0(fam.upper()), t.dump(), dt, extract.normalise(body), line, CTR_METHOD)
            print(fam, i, "ok")
