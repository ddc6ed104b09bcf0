"""Rebuild a TVM v0.20 CUDA design-space sketch trace (MetaSchedule JSON) from the
rule code and a sketch's decisions. Rules in DefaultCUDA order, each applied to every
block of BlockCollector's list from the last to the first (PostOrderApply)."""
import json

P4 = "0.25"
P5 = "0.2000000000000000111"

class T:
    def __init__(self):
        self.n = 0
        self.insts = []
        self.dec = []
    def rv(self, p, k=1):
        out = []
        for _ in range(k):
            out.append(f"{p}{self.n}")
            self.n += 1
        return out
    def add(self, kind, ins, attrs, outs, dec=None):
        if dec is not None:
            self.dec.append((len(self.insts), dec))
        self.insts.append((kind, ins, attrs, outs))
        return outs
    def dump(self):
        def enc(x):
            if isinstance(x, list):
                return "[" + ",".join(enc(y) for y in x) + "]"
            if isinstance(x, Raw):
                return x.s
            if isinstance(x, str):
                return json.dumps(x)
            return str(x)
        insts = "[" + ",".join(enc([k, i, a, o]) for k, i, a, o in self.insts) + "]"
        decs = "[" + ",".join("[%d,%s]" % (i, enc(d)) for i, d in self.dec) + "]"
        return "[" + insts + "," + decs + "]"

class Raw:
    def __init__(self, s): self.s = s

def coop():
    return [[1, 2, 3, 4], [Raw(P4)] * 4]

def unroll_cands():
    return [[0, 16, 64, 512, 1024], [Raw(P5)] * 5]

def mlt(t, b, kinds, tiles, coop_dec, read_ndims):
    """MultiLevelTiling SSSRRSRS with CUDA reuse: write local at level 3, read shared at level 4."""
    t.add("Annotate", [b, '"SSSRRSRS"'], ["meta_schedule.tiling_structure"], [])
    loops = t.add("GetLoops", [b], [], t.rv("l", len(kinds)))
    S, R = [], []
    it = iter(tiles)
    for l, k in zip(loops, kinds):
        n = 5 if k == "S" else 3
        d = next(it)
        assert len(d) == n
        vs = t.add("SamplePerfectTile", [l], [n, 64], t.rv("v", n), dec=d)
        ls = t.add("Split", [l] + vs, [1, 0], t.rv("l", n))
        (S if k == "S" else R).append(ls)
    lv = {"S": [[s[i] for s in S] for i in range(5)], "R": [[r[i] for r in R] for i in range(3)]}
    order = lv["S"][0] + lv["S"][1] + lv["S"][2] + lv["R"][0] + lv["R"][1] + lv["S"][3] + lv["R"][2] + lv["S"][4]
    t.add("Reorder", order, [], [])
    fused = []
    for lvl, th in zip(range(3), ["blockIdx.x", "vthread.x", "threadIdx.x"]):
        f = t.add("Fuse", lv["S"][lvl], [1], t.rv("l"))[0]
        t.add("Bind", [f], [th], [])
        fused.append(f)
    t.add("Annotate", [b, 32], ["meta_schedule.thread_extent_low_inclusive"], [])
    t.add("Annotate", [b, 1024], ["meta_schedule.thread_extent_high_inclusive"], [])
    wc = t.add("CacheWrite", [b, []], [0, "local"], t.rv("b"))[0]
    t.add("ReverseComputeAt", [wc, fused[2]], [1, -1], [])
    at = lv["R"][0][-1]
    nouter = 3 + len(R)
    cds = iter(coop_dec)
    for i, nd in enumerate(read_ndims):
        cr = t.add("CacheRead", [b, [b]], [i, "shared"], t.rv("b"))[0]
        t.add("ComputeAt", [cr, at], [1, -1], [])
        ls = t.add("GetLoops", [cr], [], t.rv("l", nouter + nd))
        t.add("Fuse", ls[-nd:], [1], t.rv("l"))
        v = t.add("SampleCategorical", [], coop(), t.rv("v"), dec=next(cds))[0]
        t.add("Annotate", [cr, v], ["meta_schedule.cooperative_fetch"], [])

def unroll(t, root, d):
    v = t.add("SampleCategorical", [], unroll_cands(), t.rv("v"), dec=d)[0]
    t.add("Annotate", [root, v], ["meta_schedule.unroll_explicit"], [])

def sketch(blocks, anchor, kinds, tiles, coop_dec, read_ndims, inline, unroll_dec):
    """blocks: program order (root appended); inline: [(kind, blockname)] in AutoInline order."""
    t = T()
    rv = {}
    for name in blocks + ["root"]:
        rv[name] = t.add("GetBlock", [], [name, "main"], t.rv("b"))[0]
    mlt(t, rv[anchor], kinds, tiles, coop_dec, read_ndims)
    for kind, name in inline:
        t.add(kind, [rv[name]], [], [])
    unroll(t, rv["root"], unroll_dec)
    return t
